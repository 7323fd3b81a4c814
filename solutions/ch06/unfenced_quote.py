"""Exercise 06.2 answer: remove one fence from a copy, then put it back.

See EXPLANATION.md.
"""

from __future__ import annotations

import sqlite3

from crashcourse.claims import Claim, fence
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

UPSERT = ("INSERT INTO quotes (work_id, sku, unit_cents, generation)"
          " VALUES (:work_id, :sku, :unit_cents, :generation)"
          " ON CONFLICT (work_id, sku) DO UPDATE"
          " SET unit_cents = :unit_cents, generation = :generation")


def install(conn: sqlite3.Connection) -> None:
    """Given: the claims and fence tables plus ``quotes``."""
    fence.install(conn)
    ensure_schema(conn, SCHEMA)


def params(claim: Claim, sku: str, unit_cents: int) -> dict:
    return {"work_id": claim.id, "sku": sku, "unit_cents": unit_cents,
            "generation": claim.generation}


def record_quote_unfenced(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    """The broken copy: nobody asks whether ``claim`` is still the live claim."""
    conn.execute(UPSERT, params(claim, sku, unit_cents))


def record_quote(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    """The check and the write in one fenced transaction."""
    with fence.fenced(conn, claim, "quote"):
        conn.execute(UPSERT, params(claim, sku, unit_cents))
