"""WRONG ANSWER to exercise 06.1 (chapter 06): settle first, then cancel.

The mistake: the orders that may be out are looked up first, and only then
is the work cancelled (its unsent orders revoked in the same transaction,
rightly) and the supplier fenced. Between the lookups and the cancel the
holder is still current: it can let its signed-off order out (SENDING, its
request on its way), and the cancel's revocation no longer touches it, since
it is no longer unsent. Nobody asks the supplier about it: an order that may
be placed stays uncertain and unasked. Cancel first: after that no holder
admits anything. Caught by
``test_the_holder_letting_an_order_out_at_any_statement_is_looked_up``.
"""


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Look up what went out, then cancel, revoke and fence."""
    looked_up = {operation_key: settle(conn, operation_key, supplier_url)
                 for operation_key in uncertain_orders(conn, work_id)}
    generation, revoked = cancel_here(conn, work_id)
    fence_supplier(supplier_url, work_id, generation)
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
