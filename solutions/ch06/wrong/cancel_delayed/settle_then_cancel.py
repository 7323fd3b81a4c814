"""Settle first, then cancel. Caught by
``test_the_holder_letting_an_order_out_at_any_statement_is_looked_up``."""


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Look up what went out, then cancel, revoke and fence."""
    looked_up = {operation_key: settle(conn, operation_key, supplier_url)
                 for operation_key in uncertain_orders(conn, work_id)}
    generation, revoked = cancel_here(conn, work_id)
    fence_supplier(supplier_url, work_id, generation)
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
