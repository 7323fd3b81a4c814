"""The runtime's settlement, called. Caught by
``test_unsent_revoked_sent_discovered_nothing_resent``."""

from crashcourse.claims.orders import settle_cancelled as runtime_settle


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Cancel here, then let the runtime settle."""
    generation, revoked = cancel_here(conn, work_id)
    settled = runtime_settle(conn, work_id, supplier_url)
    looked_up = {operation_key: orders.NOT_FOUND if status == orders.REVOKED
                 else status for operation_key, status in settled.items()}
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
