"""WRONG ANSWER to exercise 01.2 (chapter 01): read the key, then a plain insert.

The mistake: the read and the insert run in autocommit mode, each statement
its own transaction, so nothing stops a rival from inserting the key between
them. The primary key protects the data, but the insert then raises
``IntegrityError``: the worker crashes instead of answering. Caught by
``test_a_rival_insert_between_statements_is_an_answer_not_a_crash`` (rival
after statement 1).
"""


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
