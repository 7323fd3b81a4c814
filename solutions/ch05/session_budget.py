"""Exercise 05.2 answer: separate sessions from account spending."""

from __future__ import annotations

import sqlite3

from crashcourse.claims import Claim, fence
from crashcourse.store import ensure_schema
from crashcourse.validate import check_amount

SCHEMA = """
CREATE TABLE IF NOT EXISTS reservations (
    operation_key TEXT PRIMARY KEY,
    work_id       TEXT NOT NULL REFERENCES work (id),
    session       TEXT NOT NULL,
    amount_cents  INTEGER NOT NULL CHECK (amount_cents > 0)
)
"""


def install(conn: sqlite3.Connection) -> None:
    """Given: the claims tables plus ``reservations``."""
    fence.install(conn)
    ensure_schema(conn, SCHEMA)


def reserve(
    conn: sqlite3.Connection, claim: Claim, operation_key: str, amount_cents: int,
    ceiling_cents: int,
) -> bool:
    """Check the holder, sum what is reserved, insert: all in one transaction."""
    check_amount(amount_cents)  # bad input raises before the write lock is taken
    with guarded(conn, claim):
        if reserved_total(conn, claim) + amount_cents > ceiling_cents:
            return False
        record(conn, claim, operation_key, amount_cents)
    return True


def guarded(conn: sqlite3.Connection, claim: Claim):
    """One write transaction, the write lock taken first, that raises
    ``StaleClaim`` unless ``claim`` still holds its work, on the store's clock."""
    return fence.fenced(conn, claim, "reserve")


def reserved_total(conn: sqlite3.Connection, claim: Claim) -> int:
    """What every session of every worker has reserved: the account's total."""
    return conn.execute(
        "SELECT coalesce(sum(amount_cents), 0) FROM reservations").fetchone()[0]


def record(conn: sqlite3.Connection, claim: Claim, operation_key: str,
           amount_cents: int) -> None:
    """The reservation's row, under the claim's work and session."""
    conn.execute(
        "INSERT INTO reservations (operation_key, work_id, session, amount_cents)"
        " VALUES (:operation_key, :work_id, :session, :amount)",
        {"operation_key": operation_key, "work_id": claim.id,
         "session": claim.session, "amount": amount_cents})
