"""Solution 01.2: a supplier order placed once per key (chapter 01).

See EXPLANATION.md.
"""

from __future__ import annotations

import sqlite3

from crashcourse.effects import EffectConflict
from crashcourse.store import ensure_schema, immediate
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
    with immediate(conn):  # the write lock is ours before we look at anything
        inserted = conn.execute(
            "INSERT INTO supplier_orders (key, sku, quantity)"
            " VALUES (:key, :sku, :quantity)"
            " ON CONFLICT (key) DO NOTHING",
            {"key": key, **offered},
        ).rowcount
        if inserted:
            return "placed"
        row = recorded(conn, key)
    return answered(key, row, offered)


def recorded(conn: sqlite3.Connection, key: str):
    """The order recorded under ``key``, or None."""
    return conn.execute(
        "SELECT sku, quantity FROM supplier_orders WHERE key = :key",
        {"key": key},
    ).fetchone()


def answered(key: str, row, offered: dict) -> str:
    """A replay of the same order, or a conflict carrying both, as values."""
    found = {"sku": row[0], "quantity": row[1]}
    if found != offered:
        raise EffectConflict(key, found, offered)
    return "already_placed"
