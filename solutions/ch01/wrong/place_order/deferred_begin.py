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
