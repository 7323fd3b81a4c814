"""WRONG ANSWER to exercise 01.2 (chapter 01): harmless statements first, then
read and insert (a grader that watched only the first few statements passed
it).

The mistake is ``read_then_insert.py``'s, moved later: four ``SELECT 1`` that
change nothing, then the read and the plain insert in autocommit mode. A
grader whose rival fires only after statements 1 to 4 never lands between the
read and the insert and passes it; a rival there makes the insert raise
``IntegrityError``. Caught by
``test_a_rival_insert_between_statements_is_an_answer_not_a_crash`` (rival
after statement 5) and the other boundary tests.
"""


def place_order_once(
    conn: sqlite3.Connection, key: str, sku: str, quantity: int
) -> str:
    """Record the order under ``key`` unless it is already recorded."""
    offered = check_order(key, sku, quantity)
    for _ in range(4):  # statements that change nothing
        conn.execute("SELECT 1")
    row = conn.execute(
        "SELECT sku, quantity FROM supplier_orders WHERE key = :key", {"key": key}
    ).fetchone()
    if row is not None:
        recorded = {"sku": row[0], "quantity": row[1]}
        if recorded != offered:
            raise EffectConflict(key, recorded, offered)
        return "already_placed"
    conn.execute(
        "INSERT INTO supplier_orders (key, sku, quantity)"
        " VALUES (:key, :sku, :quantity)",
        {"key": key, **offered},
    )
    return "placed"
