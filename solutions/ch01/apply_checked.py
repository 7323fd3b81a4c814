"""Solution 01.1: the payload-checked apply that keeps refusals (chapter 01).

See EXPLANATION.md.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from crashcourse.effects import EffectConflict
from crashcourse.store import ensure_schema, immediate
from crashcourse.validate import canonical, check_text

SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    key     TEXT PRIMARY KEY,
    payload TEXT NOT NULL,   -- JSON of what the key was first used for
    result  TEXT,            -- JSON of what mutate returned, NULL if it refused
    refusal TEXT             -- why mutate refused, NULL if it applied
)
"""


class Refused(Exception):
    """What a mutation raises to refuse; ``reason`` says why (given)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def install(conn: sqlite3.Connection) -> None:
    """Create the ``requests`` table (given)."""
    ensure_schema(conn, SCHEMA)


def apply_checked(
    conn: sqlite3.Connection,
    key: str,
    payload: Any,
    mutate: Callable[[sqlite3.Connection], Any],
) -> tuple[str, Any]:
    """Commit ``mutate(conn)``'s writes at most once per ``key``; keep its answer."""
    check_text("operation key", key)  # ValueError before anything is written
    offered = spelled(payload)
    with transaction(conn):  # the claim, the writes and the answer: one commit
        if not claim(conn, key, offered):
            return replayed(conn, key, offered, payload)
        result, refusal = mutated(conn, key, mutate)
    if refusal is not None:
        raise Refused(refusal)  # committed first: the refusal is on record
    return "applied", result


def spelled(payload: Any) -> str:
    """One spelling per value (canonical JSON, sorted keys)."""
    return canonical(payload)


def transaction(conn: sqlite3.Connection):
    """The call's one transaction, the write lock taken at its BEGIN."""
    return immediate(conn)


def claim(conn: sqlite3.Connection, key: str, offered: str) -> bool:
    """Claim ``key`` first; the primary key says whether this call won it."""
    return conn.execute(
        "INSERT INTO requests (key, payload) VALUES (:key, :payload)"
        " ON CONFLICT (key) DO NOTHING",
        {"key": key, "payload": offered},
    ).rowcount == 1


def replayed(conn: sqlite3.Connection, key: str, offered: str,
             payload: Any) -> tuple[str, Any]:
    """The answer ``key`` was given: a conflict, its refusal, or its result."""
    row = conn.execute(
        "SELECT payload, result, refusal FROM requests WHERE key = :key",
        {"key": key},
    ).fetchone()
    if row["payload"] != offered:
        raise EffectConflict(key, json.loads(row["payload"]), payload)
    if row["refusal"] is not None:
        raise Refused(row["refusal"])
    return "already_applied", json.loads(row["result"])


def mutated(conn: sqlite3.Connection, key: str,
            mutate: Callable[[sqlite3.Connection], Any]) -> tuple[Any, str | None]:
    """(result, None), or (None, reason) with the refused writes undone and
    the claim kept; either is recorded on the key's row. Any other exception
    rolls the whole transaction back."""
    conn.execute("SAVEPOINT mutation")  # what mutate writes can be undone alone
    try:
        result = mutate(conn)
    except Refused as refused:
        conn.execute("ROLLBACK TO mutation")  # its writes go, the claim stays
        conn.execute("RELEASE mutation")
        record(conn, key, refusal=str(refused.reason))
        return None, str(refused.reason)
    conn.execute("RELEASE mutation")
    record(conn, key, result=result)
    return result, None


def record(conn: sqlite3.Connection, key: str, *, result: Any = None,
           refusal: str | None = None) -> None:
    """Write the key's answer on its row: a result, or a refusal."""
    conn.execute(
        "UPDATE requests SET result = :result, refusal = :refusal WHERE key = :key",
        {"key": key, "result": None if refusal else canonical(result),
         "refusal": refusal},
    )
