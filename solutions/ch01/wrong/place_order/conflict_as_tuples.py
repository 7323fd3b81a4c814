"""WRONG ANSWER to exercise 01.2 (chapter 01): the conflict raised with tuples.

The mistake: the lock and the comparison are right (``BEGIN IMMEDIATE``, so
no rival ever lands inside), but ``EffectConflict`` carries the recorded and
offered orders as ``(sku, quantity)`` tuples, and the offered one as the
recorded. The caller that reads ``conflict.recorded["sku"]`` to tell the owner
what the key is bound to crashes or says the wrong thing. Caught by
``test_the_same_key_for_another_order_is_a_conflict``.
"""


def place_order_once(
    conn: sqlite3.Connection, key: str, sku: str, quantity: int
) -> str:
    """Record the order under ``key`` unless it is already recorded."""
    offered = check_order(key, sku, quantity)
    with immediate(conn):
        inserted = conn.execute(
            "INSERT INTO supplier_orders (key, sku, quantity)"
            " VALUES (:key, :sku, :quantity)"
            " ON CONFLICT (key) DO NOTHING",
            {"key": key, **offered},
        ).rowcount
        if inserted:
            return "placed"
        row = conn.execute(
            "SELECT sku, quantity FROM supplier_orders WHERE key = :key",
            {"key": key},
        ).fetchone()
    if (row[0], row[1]) != (sku, quantity):
        raise EffectConflict(key, (sku, quantity), tuple(row))
    return "already_placed"
