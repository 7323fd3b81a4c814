"""Exercise 05.2: separate sessions from account spending.

"One live holder per session" keeps two turns of one conversation apart. It
says nothing about two sessions that spend from the same account. Write the
reservation that does.
"""

from __future__ import annotations

import sqlite3

from crashcourse.claims import fence
from crashcourse.claims import Claim
from crashcourse.store import ensure_schema
from crashcourse.validate import check_amount  # noqa: F401  (the house's check)

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
    """Reserve ``amount_cents`` of the account for ``claim``'s order, whose
    operation key is ``operation_key``.

    * ``amount_cents`` goes through ``validate.check_amount`` before anything
      is written: a bool or a float raises ``TypeError``, zero or a negative
      amount ``ValueError``.
    * In ONE fenced transaction (``fence.fenced``): a stale ``claim`` raises
      ``fence.StaleClaim``; if the reservations already committed plus this
      one would exceed ``ceiling_cents``, return False and write nothing;
      otherwise insert the row (keyed by ``operation_key``) and return True.
    """
    raise NotImplementedError("exercise 05.2: write reserve")
