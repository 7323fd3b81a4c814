"""WRONG ANSWER to exercise 01.2 (chapter 01): read the key, then a plain insert.

The mistake: the read and the insert run in autocommit mode, each statement
its own transaction, so nothing stops a rival from inserting the key between
them. The primary key protects the data, but the insert then raises
``IntegrityError``: the worker crashes instead of answering. Caught by
``test_a_rival_insert_between_statements_is_an_answer_not_a_crash`` (rival
after statement 1).
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
    row = conn.execute(
        "SELECT sku, quantity FROM supplier_orders WHERE key = :key", {"key": key}
    ).fetchone()
    if row is not None:
        recorded = {"sku": row[0], "quantity": row[1]}
        if recorded != offered:
            raise EffectConflict(key, recorded, offered)
        return "already_placed"
    conn.execute(  # not there a moment ago, so it must be ours to write
        "INSERT INTO supplier_orders (key, sku, quantity)"
        " VALUES (:key, :sku, :quantity)",
        {"key": key, **offered},
    )
    return "placed"
