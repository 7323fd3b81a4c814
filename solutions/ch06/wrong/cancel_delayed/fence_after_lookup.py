"""Fence the supplier after the lookups. Caught by
``test_the_held_post_arriving_before_any_of_your_requests_is_told_truly``."""


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Cancel and revoke, look up, then fence."""
    generation, revoked = cancel_here(conn, work_id)
    looked_up = {operation_key: settle(conn, operation_key, supplier_url)
                 for operation_key in uncertain_orders(conn, work_id)}
    fence_supplier(supplier_url, work_id, generation)
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
