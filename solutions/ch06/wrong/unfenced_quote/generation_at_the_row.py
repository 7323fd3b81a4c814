"""WRONG ANSWER to exercise 06.2 (chapter 06): the generation compared at the row.

The mistake: instead of the fence, the upsert refuses to replace a quote
written by a NEWER generation (the supplier's rule from the chapter, copied
to the row). The stale holder's quote for flour no longer replaces the
current one, but nothing refuses the stale holder: no ``StaleClaim``, no
refusal recorded, and a quote for an item nobody quoted yet lands under
generation 1. Caught by ``test_the_restored_fence_keeps_the_current_quote``
and ``test_a_stale_holder_cannot_add_a_quote_either``.
"""

from __future__ import annotations

import sqlite3

from crashcourse import fence
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
    """A quote replaces only one written by the same or an older generation."""
    conn.execute(UPSERT + " WHERE excluded.generation >= quotes.generation",
                 params(claim, sku, unit_cents))
