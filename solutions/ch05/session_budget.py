"""Exercise 05.2 answer: separate sessions from account spending."""

from __future__ import annotations

import sqlite3

from crashcourse import fence
from crashcourse.claims import Claim
from crashcourse.store import ensure_schema

SCHEMA = """
CREATE TABLE IF NOT EXISTS reservations (
    op_id        TEXT PRIMARY KEY,
    work_id      TEXT NOT NULL REFERENCES work (id),
    session      TEXT NOT NULL,
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0)
)
"""


def install(conn: sqlite3.Connection) -> None:
    """Given: the claims tables plus ``reservations``."""
    fence.install(conn)
    ensure_schema(conn, SCHEMA)


def reserve(
    conn: sqlite3.Connection, held: Claim, op_id: str, amount_cents: int,
    ceiling_cents: int,
) -> bool:
    """Check the holder, sum what is reserved, insert: all in one transaction."""
    if isinstance(amount_cents, bool) or not isinstance(amount_cents, int) or (
        amount_cents <= 0
    ):
        raise ValueError(f"amount must be positive integer cents, got {amount_cents!r}")
    with fence.fenced(conn, held, "reserve"):
        reserved = conn.execute(
            "SELECT coalesce(sum(amount_cents), 0) FROM reservations").fetchone()[0]
        if reserved + amount_cents > ceiling_cents:
            return False
        conn.execute(
            "INSERT INTO reservations (op_id, work_id, session, amount_cents)"
            " VALUES (:op_id, :work_id, :session, :amount)",
            {"op_id": op_id, "work_id": held.id, "session": held.session,
             "amount": amount_cents})
    return True
