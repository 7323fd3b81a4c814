"""The recorded order read and compared outside any transaction, then an ``INSERT OR
IGNORE`` trusted to settle a race. Caught by
``test_a_rival_with_another_order_under_our_key_is_a_conflict``."""


def place_order_once(conn, key, sku, quantity):
    offered = check_order(key, sku, quantity)
    row = recorded(conn, key)
    if row is not None:  # compared here, outside any transaction
        answered(key, row, offered)
    inserted = conn.execute(  # a race here is settled by the primary key
        "INSERT OR IGNORE INTO supplier_orders (key, sku, quantity)"
        " VALUES (:key, :sku, :quantity)", {"key": key, **offered}).rowcount
    return "placed" if inserted else "already_placed"
