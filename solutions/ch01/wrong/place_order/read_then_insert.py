"""The read and the insert in autocommit mode, each its own transaction: a rival's
insert between them makes the insert raise ``IntegrityError``, a crash, not an answer.
Caught by ``test_a_rival_insert_between_statements_is_an_answer_not_a_crash``."""


def place_order_once(conn, key, sku, quantity):
    offered = check_order(key, sku, quantity)
    row = recorded(conn, key)
    if row is not None:
        return answered(key, row, offered)
    conn.execute(  # not there a moment ago, so it must be ours to write
        "INSERT INTO supplier_orders (key, sku, quantity)"
        " VALUES (:key, :sku, :quantity)", {"key": key, **offered})
    return "placed"
