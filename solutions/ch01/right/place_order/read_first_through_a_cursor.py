"""A correct answer in another shape: read first, insert only if missing, all
through ``conn.cursor()``, inside ``BEGIN IMMEDIATE`` so no rival fits
between the read and the insert. The grader's rival runs on SQLite's own
statement trace, so it sees these statements; and it must not fault an
answer for reading before it writes when the lock is already held."""


def place_order_once(conn, key, sku, quantity):
    offered = check_order(key, sku, quantity)
    with immediate(conn):  # the write lock first: nobody writes between
        cursor = conn.cursor()
        row = cursor.execute("SELECT sku, quantity FROM supplier_orders"
                             " WHERE key = :key", {"key": key}).fetchone()
        if row is None:
            cursor.executemany("INSERT INTO supplier_orders (key, sku, quantity)"
                               " VALUES (:key, :sku, :quantity)",
                               [{"key": key, **offered}])
            return "placed"
    return answered(key, row, offered)
