"""WRONG ANSWER to exercise 01.2 (chapter 01): read then insert, through a cursor.

The mistake is ``read_then_insert.py``'s (the read and the insert in
autocommit mode, a rival's insert can land between them and the insert then
raises ``IntegrityError``), written with ``conn.cursor()`` and
``executemany``. A grader that wrapped only ``conn.execute`` never saw these
statements, so its rival never fired and it passed. Caught by
``test_a_rival_insert_between_statements_is_an_answer_not_a_crash`` (rival
after statement 1): the grader watches SQLite's own statement trace.
"""


def place_order_once(
    conn: sqlite3.Connection, key: str, sku: str, quantity: int
) -> str:
    """Record the order under ``key`` unless it is already recorded."""
    offered = check_order(key, sku, quantity)
    cursor = conn.cursor()
    row = cursor.execute(
        "SELECT sku, quantity FROM supplier_orders WHERE key = :key", {"key": key}
    ).fetchone()
    if row is not None:
        recorded = {"sku": row[0], "quantity": row[1]}
        if recorded != offered:
            raise EffectConflict(key, recorded, offered)
        return "already_placed"
    cursor.executemany(
        "INSERT INTO supplier_orders (key, sku, quantity)"
        " VALUES (:key, :sku, :quantity)",
        [{"key": key, **offered}],
    )
    return "placed"
