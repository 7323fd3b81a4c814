"""WRONG ANSWER to exercise 06.1 (chapter 06): only SENDING orders are looked up.

The mistake: "what may be outside" is taken to be the orders still marked
SENDING. An order whose answer was lost is UNKNOWN, and it may well have
reached the supplier: it is never looked up, so its receipt is never
recorded. ``orders.UNCERTAIN`` names both statuses. Caught by
``test_unsent_revoked_sent_discovered_nothing_resent``.
"""


from crashcourse.store import immediate


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Cancel and revoke in one transaction, then only ask about what went out."""
    with immediate(conn):
        generation = fence.cancel_locked(conn, work_id, clock())
        revoked = orders.revoke_unsent(conn, work_id)
    uncertain = conn.execute(
        "SELECT operation_key FROM orders"
        " WHERE work_id = :work_id"
        # a request may have reached the supplier: ask, never resend
        f" AND status = '{orders.SENDING}'"
        " ORDER BY rowid",
        {"work_id": work_id},
    ).fetchall()
    looked_up = {
        row["operation_key"]: orders.lookup(conn, row["operation_key"], supplier_url)
        for row in uncertain
    }
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
