"""Only SENDING orders are looked up. Caught by
``test_unsent_revoked_sent_discovered_nothing_resent``."""


def uncertain_orders(conn: sqlite3.Connection, work_id: str) -> list[str]:
    """The orders still SENDING, and no others."""
    return [row["operation_key"] for row in conn.execute(
        f"SELECT operation_key FROM orders WHERE work_id = :work_id"
        f" AND status = '{orders.SENDING}' ORDER BY rowid", {"work_id": work_id})]
