"""Effects need identity: operation keys and the effect boundary (chapter 01).

An *operation key* names one intended action: the same task, step, action and
arguments always give the same key, in any process, on any day. The *effect
boundary* ``apply_once`` lets a local mutation's writes COMMIT at most once per
key. The mutation itself may RUN more than once: an attempt killed before its
commit is rolled back, and the next attempt runs it again. So whatever
``mutate`` does outside this database (a call to a service) is not covered.

* first call: the ledger row and the mutation commit in ONE transaction;
* same key, same payload: nothing runs, the recorded result comes back;
* same key, another payload: ``EffectConflict``, nothing written.

Two guards, each enough on its own here. ``BEGIN IMMEDIATE`` takes SQLite's
write lock before anything is read, so two processes on one key go one after
the other. The ledger row is claimed with ``INSERT ... ON CONFLICT DO
NOTHING`` rather than read first, so the primary key keeps one row per key
even where no lock orders the callers (chapter 01 runs the race both ways).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import namedtuple

from crashcourse.store import check_backend, ensure_schema, immediate
from crashcourse.store.dialect import POSTGRES, SQLITE
from crashcourse.validate import canonical, check_text

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["RUNS_ON", "LEDGER_SCHEMA", "EffectConflict",
    "Applied", "FencingToken", "operation_key", "check_step", "install",
    "check_key", "apply_once", "replay"]

# The databases install() accepts (store.check_backend): a store on any other
# is refused before anything is written.
RUNS_ON = (SQLITE, POSTGRES)

TYPE_CHECKING = False  # typing costs every worker ~2 ms at start: hints only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS effect_ledger (
    key     TEXT PRIMARY KEY,
    payload TEXT NOT NULL,   -- canonical JSON of what the key was used for
    result  TEXT NOT NULL    -- canonical JSON of what the first call returned
)
"""


class EffectConflict(Exception):
    """A key that is already bound to a different payload (chapter 01)."""

    def __init__(self, key: str, recorded: Any, offered: Any):
        super().__init__(f"operation key {key!r} is bound to another payload")
        self.key, self.recorded, self.offered = key, recorded, offered


class Applied(namedtuple("_AppliedFields", "status result")):
    """What ``apply_once`` did: ``status`` is ``applied`` now, or
    ``already_applied`` before; ``result`` is what the first call returned."""

    __slots__ = ()


class FencingToken(namedtuple("_FencingTokenFields", "work generation")):
    """What a write carries so that its target can refuse a stale holder:
    the work it is for and the generation of the claim that sends it (a
    claim's ``token``; the workflow's is its id and version). A target that
    checks it refuses any generation below the highest it has seen for that
    work (chapter 06). Travels whole; only the supplier's client spells it
    as headers."""

    __slots__ = ()


def operation_key(task: str, step: int | str, action: str, args: Any) -> str:
    """A key derived from (task, step, action, args), stable across processes.

    Readable prefix for people, digest for identity: the first 64 bits of a
    SHA-256 of the canonical JSON, so two different argument sets sharing a
    key is vanishingly unlikely (not impossible). Nothing random or time-based
    goes in: a replacement process recomputes the same key (chapter 01).
    """
    check_text("task", task)
    check_text("action", action)
    check_step(step)
    digest = hashlib.sha256(canonical([task, step, action, args]).encode()).hexdigest()
    return f"{task}/{step}/{action}/{digest[:16]}"


def check_step(step: object) -> int | str:
    """A step is a number (0 or more, never a bool) or a name (chapter 01)."""
    if isinstance(step, str):
        return check_text("step", step)
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step must be a number 0 or more, or a name: {step!r}")
    return step


def install(conn: sqlite3.Connection) -> None:
    """Create the effect ledger table in ``conn``'s database."""
    check_backend(conn, RUNS_ON, __name__)
    ensure_schema(conn, LEDGER_SCHEMA)


def check_key(key: Any) -> str:
    """Refuse keys that cannot identify anything: empty, blank or not a string."""
    return check_text("operation key", key)


def apply_once(
    conn: sqlite3.Connection,
    key: str,
    payload: Any,
    mutate: Callable[[sqlite3.Connection], Any],
) -> Applied:
    """Commit ``mutate``'s writes at most once for ``key``, in one transaction
    with its ledger row (chapter 01). ``mutate`` runs inside that transaction;
    an attempt that dies before the commit leaves nothing, and the next one
    runs ``mutate`` again."""
    check_key(key)
    offered = canonical(payload)
    with immediate(conn):
        inserted = conn.execute(
            "INSERT INTO effect_ledger (key, payload, result)"
            " VALUES (:key, :payload, 'null')"
            " ON CONFLICT (key) DO NOTHING",
            {"key": key, "payload": offered},
        ).rowcount
        if not inserted:
            return replay(conn, key, offered)
        result = mutate(conn)
        conn.execute(
            "UPDATE effect_ledger SET result = :result WHERE key = :key",
            {"key": key, "result": canonical(result)},
        )
    return Applied("applied", result)


def replay(conn: sqlite3.Connection, key: str, offered: str) -> Applied:
    """The recorded result for ``key``, or a conflict if the payload differs."""
    row = conn.execute(
        "SELECT payload, result FROM effect_ledger WHERE key = :key", {"key": key}
    ).fetchone()
    if row["payload"] != offered:
        raise EffectConflict(key, json.loads(row["payload"]), json.loads(offered))
    return Applied("already_applied", json.loads(row["result"]))
