"""WRONG ANSWER to exercise 01.2 (chapter 01): read, then insert, after a plain BEGIN.

The mistake: the transaction is opened with ``BEGIN`` (deferred), not
``BEGIN IMMEDIATE``. A deferred transaction takes no lock until it writes:
its first read only fixes a snapshot. A rival can commit the key after that
read; the insert then finds the snapshot out of date and SQLite refuses it
with ``database is locked`` (an ``OperationalError``, and no busy timeout
helps). Caught by
``test_a_rival_insert_between_statements_is_an_answer_not_a_crash`` (rival
after statement 2).
"""

from __future__ import annotations

import sqlite3

from crashcourse.effects import EffectConflict
from crashcourse.store import ensure_schema
from crashcourse.validate import check_count, check_text

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


def check_order(key: object, sku: object, quantity: object) -> dict:
    """The house's door checks (``crashcourse.validate``), before any statement."""
    check_text("operation key", key)
    check_text("sku", sku)
    check_count("quantity", quantity)  # TypeError for True, 2.5; ValueError below 0
    if quantity == 0:
        raise ValueError("quantity must be positive")
    return {"sku": sku, "quantity": quantity}


def place_order_once(
    conn: sqlite3.Connection, key: str, sku: str, quantity: int
) -> str:
    """Record the order under ``key`` unless it is already recorded."""
    offered = check_order(key, sku, quantity)
    conn.execute("BEGIN")  # one transaction for the read and the insert
    try:
        row = conn.execute(
            "SELECT sku, quantity FROM supplier_orders WHERE key = :key",
            {"key": key},
        ).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO supplier_orders (key, sku, quantity)"
                " VALUES (:key, :sku, :quantity)",
                {"key": key, **offered},
            )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    if row is None:
        return "placed"
    recorded = {"sku": row[0], "quantity": row[1]}
    if recorded != offered:
        raise EffectConflict(key, recorded, offered)
    return "already_placed"
