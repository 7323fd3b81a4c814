"""WRONG ANSWER to exercise 06.1 (chapter 06): NOT_FOUND read as "never sent".

The mistake: an order the supplier does not know is settled as REVOKED, as
if it never left. The request may still be in flight (chapter 06 holds one
at the supplier for seconds): the cancelled work would then show no order
while the supplier commits one. It must stay uncertain until a later lookup
settles it. Caught by ``test_an_order_the_supplier_never_saw_stays_uncertain``.
"""


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
        f" AND status IN {sql_list(orders.UNCERTAIN)}"
        " ORDER BY rowid",
        {"work_id": work_id},
    ).fetchall()
    looked_up = {
        row["operation_key"]: orders.lookup(conn, row["operation_key"], supplier_url)
        for row in uncertain
    }
    with immediate(conn):  # nobody has it: it never left, so it is revoked
        for operation_key, answer in looked_up.items():
            if answer == orders.NOT_FOUND:
                conn.execute(
                    f"UPDATE orders SET status = '{orders.REVOKED}'"
                    " WHERE operation_key = :operation_key",
                    {"operation_key": operation_key})
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
