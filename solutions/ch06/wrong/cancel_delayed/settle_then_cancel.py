"""WRONG ANSWER to exercise 06.1 (chapter 06): settle first, then cancel.

The mistake: the orders that may be out are looked up first, and only then
is the work cancelled and its unsent orders revoked (in one transaction,
rightly). Between the two the holder is still current: it can let its
signed-off order out (SENDING, its request on its way), and the cancel's
revocation no longer touches it, since it is no longer unsent. Nobody asks
the supplier about it: an order that may be placed stays uncertain and
unasked. Cancel first: after that no holder can admit anything. Caught by
``test_the_holder_letting_an_order_out_at_any_statement_is_looked_up``.
"""


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Ask about what went out, then cancel and revoke in one transaction."""
    uncertain = conn.execute(
        "SELECT operation_key FROM orders"
        " WHERE work_id = :work_id"
        # a request may have reached the supplier: ask, never resend
        f" AND status IN {sql_list(orders.UNCERTAIN)}"
        " ORDER BY rowid",
        {"work_id": work_id},
    ).fetchall()
    looked_up = {
        row["operation_key"]: orders.lookup(conn, row["operation_key"], supplier_url)
        for row in uncertain
    }
    with immediate(conn):
        generation = fence.cancel_locked(conn, work_id, clock())
        revoked = orders.revoke_unsent(conn, work_id)
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
