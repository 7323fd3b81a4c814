"""``read_then_insert.py``'s mistake after four ``SELECT 1`` that change nothing: a
grader whose rival fires only after statements 1 to 4 passed it. Caught by
``test_a_rival_insert_between_statements_is_an_answer_not_a_crash``."""


def place_order_once(conn, key, sku, quantity):
    offered = check_order(key, sku, quantity)
    for _ in range(4):  # statements that change nothing
        conn.execute("SELECT 1")
    row = recorded(conn, key)
    if row is not None:
        return answered(key, row, offered)
    conn.execute("INSERT INTO supplier_orders (key, sku, quantity)"
                 " VALUES (:key, :sku, :quantity)", {"key": key, **offered})
    return "placed"
