"""``read_then_insert.py``'s mistake written with ``conn.cursor()`` and ``executemany``,
which a grader wrapping only ``conn.execute`` never saw. Caught by
``test_a_rival_insert_between_statements_is_an_answer_not_a_crash``."""


def place_order_once(conn, key, sku, quantity):
    offered = check_order(key, sku, quantity)
    cursor = conn.cursor()
    row = cursor.execute("SELECT sku, quantity FROM supplier_orders"
                         " WHERE key = :key", {"key": key}).fetchone()
    if row is not None:
        return answered(key, row, offered)
    cursor.executemany("INSERT INTO supplier_orders (key, sku, quantity)"
                       " VALUES (:key, :sku, :quantity)", [{"key": key, **offered}])
    return "placed"
