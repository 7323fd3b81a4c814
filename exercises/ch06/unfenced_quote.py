"""Exercise 06.2: remove one fence from a copy, then put it back (chapter 06).

The holder of a restock request keeps the supplier's latest quoted price for
each item in ``quotes``: one row per work and item, replaced by every new
quote, and read by the next model turn when it proposes an order. The
runtime has no writer for it; write it twice, without its fence and with it.
"""

from __future__ import annotations

import sqlite3

from crashcourse.claims import fence
from crashcourse.claims import Claim
from crashcourse.store import ensure_schema

SCHEMA = """
CREATE TABLE IF NOT EXISTS quotes (
    work_id    TEXT NOT NULL REFERENCES work (id),
    sku        TEXT NOT NULL,
    unit_cents INTEGER NOT NULL CHECK (unit_cents > 0),
    generation INTEGER NOT NULL,   -- the claim that wrote this quote
    PRIMARY KEY (work_id, sku)
)
"""


def install(conn: sqlite3.Connection) -> None:
    """Given: the claims and fence tables plus ``quotes``."""
    fence.install(conn)
    ensure_schema(conn, SCHEMA)


def record_quote_unfenced(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    """The quote writer WITHOUT the current-holder check.

    Make ``(claim.id, sku)``'s row say ``unit_cents``, stamped with the claim's
    generation: a new row, or the previous quote replaced. This is the broken
    version on purpose.
    """
    raise NotImplementedError("exercise 06.2: write record_quote_unfenced")


def record_quote(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    """The same write with the fence back, rebuilt from ``fence.fenced``
    (action ``"quote"``): unless ``claim`` is the live claim it is refused
    (``fence.StaleClaim``), the refusal recorded, and ``quotes`` unchanged."""
    raise NotImplementedError("exercise 06.2: write record_quote")
