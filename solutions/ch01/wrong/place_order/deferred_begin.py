"""Read, then insert, after a plain (deferred) ``BEGIN``: its first read only fixes a
snapshot, a rival commits the key, and the insert is refused with ``database is locked``
(no busy timeout helps). Caught by
``test_a_rival_insert_between_statements_is_an_answer_not_a_crash``."""


def place_order_once(conn, key, sku, quantity):
    offered = check_order(key, sku, quantity)
    conn.execute("BEGIN")  # one transaction for the read and the insert
    try:
        row = recorded(conn, key)
        if row is None:
            conn.execute("INSERT INTO supplier_orders (key, sku, quantity)"
                         " VALUES (:key, :sku, :quantity)", {"key": key, **offered})
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return "placed" if row is None else answered(key, row, offered)
