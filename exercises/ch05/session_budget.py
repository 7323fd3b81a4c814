"""Exercise 05.2: separate sessions from account spending.

"One live holder per session" keeps two turns of one conversation apart. It
says nothing about two sessions that spend from the same account. Write the
reservation that does.
"""

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
    """Reserve ``amount_cents`` of the account for ``held``'s order ``op_id``.

    * ``amount_cents`` must be a positive int (not bool): else ``ValueError``
      before anything is written.
    * In ONE fenced transaction (``fence.fenced``): a stale ``held`` raises
      ``fence.StaleClaim``; if the reservations already committed plus this
      one would exceed ``ceiling_cents``, return False and write nothing;
      otherwise insert the row and return True.
    """
    raise NotImplementedError("exercise 05.2: write reserve")
