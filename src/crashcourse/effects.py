"""Effects need identity: operation keys and the effect boundary (chapter 01).

An *operation key* names one intended action: the same task, step, action and
arguments always give the same key, in any process, on any day. The *effect
boundary* ``apply_once`` runs a local mutation at most once per key:

* first call: the ledger row and the mutation commit in ONE transaction;
* same key, same payload: nothing runs, the recorded result comes back;
* same key, another payload: ``EffectConflict``, nothing written.

The ledger row is claimed with ``INSERT ... ON CONFLICT DO NOTHING``, so two
processes racing on one key are decided by the primary key constraint, not by
a read-then-insert check that both could pass.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from typing import Any, NamedTuple

from crashcourse.store import ensure_schema, immediate
from crashcourse.validate import canonical, check_text

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


class Applied(NamedTuple):
    """What ``apply_once`` did: ``applied`` now, or ``already_applied`` before."""

    status: str
    result: Any


def operation_key(task: str, step: int | str, action: str, args: Any) -> str:
    """A key derived from (task, step, action, args), stable across processes.

    Readable prefix for people, digest for identity: two different argument
    sets never share a key, and nothing random or time-based goes in.
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
    """Run ``mutate`` at most once for ``key``, committed with its ledger row."""
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
