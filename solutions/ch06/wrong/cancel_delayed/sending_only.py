"""WRONG ANSWER to exercise 06.1 (chapter 06): only SENDING orders are looked up.

The mistake: "what may be outside" is taken to be the orders still marked
SENDING. An order whose answer was lost is UNKNOWN, and it may well have
reached the supplier: it is never looked up, so its receipt is never
recorded. ``orders.UNCERTAIN`` names both statuses. Caught by
``test_unsent_revoked_sent_discovered_nothing_resent``.
"""


def uncertain_orders(conn: sqlite3.Connection, work_id: str) -> list[str]:
    """The orders still SENDING, and no others."""
    return [row["operation_key"] for row in conn.execute(
        f"SELECT operation_key FROM orders WHERE work_id = :work_id"
        f" AND status = '{orders.SENDING}' ORDER BY rowid", {"work_id": work_id})]
