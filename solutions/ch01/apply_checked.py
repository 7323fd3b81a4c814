"""Solution 01.1: the payload-checked apply (chapter 01). See EXPLANATION.md."""

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
    result  TEXT NOT NULL    -- JSON of what mutate returned that time
)
"""


def install(conn: sqlite3.Connection) -> None:
    """Create the ``requests`` table (given)."""
    ensure_schema(conn, SCHEMA)


def apply_checked(
    conn: sqlite3.Connection,
    key: str,
    payload: Any,
    mutate: Callable[[sqlite3.Connection], Any],
) -> tuple[str, Any]:
    """Run ``mutate(conn)`` at most once per ``key`` (see the exercise)."""
    check_text("operation key", key)  # ValueError before anything is written
    offered = canonical(payload)  # one spelling per value: sorted keys
    with immediate(conn):
        # Claim first; the primary key says whether this call won the claim.
        claimed = conn.execute(
            "INSERT INTO requests (key, payload, result)"
            " VALUES (:key, :payload, 'null')"
            " ON CONFLICT (key) DO NOTHING",
            {"key": key, "payload": offered},
        ).rowcount
        if not claimed:
            row = conn.execute(
                "SELECT payload, result FROM requests WHERE key = :key",
                {"key": key},
            ).fetchone()
            if row[0] != offered:
                raise EffectConflict(key, json.loads(row[0]), payload)
            return "already_applied", json.loads(row[1])
        result = mutate(conn)  # same transaction: both commit or neither
        conn.execute(
            "UPDATE requests SET result = :result WHERE key = :key",
            {"key": key, "result": canonical(result)},
        )
    return "applied", result
