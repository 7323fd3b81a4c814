"""WRONG ANSWER to exercise 01.2 (chapter 01): the payload compared from a stale read.

The mistake: the recorded order is read outside any transaction and compared
there; the insert that follows is an ``INSERT OR IGNORE``, trusted to settle
a race. Its ``rowcount`` does say who wrote the row, so a rival that records
the SAME order in the gap is reported correctly. A rival that records
ANOTHER order under our key in the gap is not: the ignored insert reads as
"already placed", and the conflict goes unnoticed because the comparison was
made before the rival's row existed. Caught by
``test_a_rival_with_another_order_under_our_key_is_a_conflict`` (rival after
statement 1).
"""


def place_order_once(
    conn: sqlite3.Connection, key: str, sku: str, quantity: int
) -> str:
    """Record the order under ``key`` unless it is already recorded."""
    offered = check_order(key, sku, quantity)
    row = conn.execute(
        "SELECT sku, quantity FROM supplier_orders WHERE key = :key", {"key": key}
    ).fetchone()
    if row is not None:  # compared here, outside any transaction
        recorded = {"sku": row[0], "quantity": row[1]}
        if recorded != offered:
            raise EffectConflict(key, recorded, offered)
    inserted = conn.execute(  # a race here is settled by the primary key
        "INSERT OR IGNORE INTO supplier_orders (key, sku, quantity)"
        " VALUES (:key, :sku, :quantity)",
        {"key": key, **offered},
    ).rowcount
    return "placed" if inserted else "already_placed"
