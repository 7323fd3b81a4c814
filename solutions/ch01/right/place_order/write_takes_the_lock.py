"""A correct answer that takes the lock another way: a plain (deferred)
``BEGIN`` whose FIRST statement is the insert. SQLite takes the write lock
with that statement, before anything is read, so the read that follows a
conflict is as safe as under ``BEGIN IMMEDIATE``."""


def place_order_once(
    conn: sqlite3.Connection, key: str, sku: str, quantity: int
) -> str:
    offered = check_order(key, sku, quantity)
    conn.execute("BEGIN")  # deferred: the insert below takes the write lock
    try:
        inserted = conn.execute(
            "INSERT OR IGNORE INTO supplier_orders (key, sku, quantity)"
            " VALUES (:key, :sku, :quantity)", {"key": key, **offered}).rowcount
        row = None if inserted else recorded(conn, key)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return "placed" if inserted else answered(key, row, offered)
