"""Exercise 01.2: a supplier order that two processes cannot place twice
(chapter 01).

The shop records each supplier order it means to place in ``supplier_orders``,
one row per operation key. Another worker process may be recording the SAME
key at the same moment, and its insert can land between any two of your
statements. Run them all on ``conn``, the connection you are given: the grader
watches every statement on it, whichever call runs it (``execute``, a cursor,
``executemany``, ``executescript``; ``crashcourse.store.immediate`` is fine).
The shared input checks are in ``crashcourse.validate``.
"""

from __future__ import annotations

import sqlite3

from crashcourse.effects import EffectConflict  # noqa: F401  (raise this one)
from crashcourse.store import ensure_schema

SCHEMA = """
CREATE TABLE IF NOT EXISTS supplier_orders (
    key      TEXT PRIMARY KEY,
    sku      TEXT NOT NULL,
    quantity INTEGER NOT NULL CHECK (quantity > 0)
)
"""


def install(conn: sqlite3.Connection) -> None:
    """Create the ``supplier_orders`` table (given)."""
    ensure_schema(conn, SCHEMA)


def place_order_once(
    conn: sqlite3.Connection, key: str, sku: str, quantity: int
) -> str:
    """Record the order under ``key`` unless it is already recorded.

    Return ``"placed"`` when THIS call wrote the row and ``"already_placed"``
    when the row was there already (also when a rival process wrote it a moment
    ago). The same ``key`` with another ``sku`` or ``quantity`` raises
    ``EffectConflict(key, recorded, offered)`` with dicts
    ``{"sku": ..., "quantity": ...}``, and writes nothing. Never let an
    ``sqlite3.IntegrityError`` escape: a race is an answer, not a crash.
    Bad input (empty key, empty sku, a quantity that is not a positive int,
    ``True`` included) raises ``ValueError`` or ``TypeError`` and writes nothing.
    """
    raise NotImplementedError("exercise 01.2: write place_order_once")
