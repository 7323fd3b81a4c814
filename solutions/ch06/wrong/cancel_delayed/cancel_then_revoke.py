"""WRONG ANSWER to exercise 06.1 (chapter 06): cancel, then revoke, apart.

The mistake: the work is cancelled in one transaction (``fence.cancel``) and
its unsent orders revoked in a second. A process killed between the two
commits leaves half a cancel: cancelled work whose signed-off order still
reads as ready to go. Caught by
``test_a_crash_inside_the_cancel_leaves_all_of_it_or_none[orders]``.
"""


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Cancel and revoke in one transaction, then only ask about what went out."""
    generation = fence.cancel(conn, work_id)  # the cancel, committed
    with immediate(conn):  # then the orders that never left
        revoked = orders.revoke_unsent(conn, work_id)
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
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
