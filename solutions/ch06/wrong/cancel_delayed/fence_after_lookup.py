"""WRONG ANSWER to exercise 06.1 (chapter 06): fence the supplier after the
lookups.

The mistake: every piece is there, in the wrong order. The lookups run
while the supplier still accepts the holder's generation: an order NOT_FOUND
is recorded REVOKED, then its held POST arrives (before the fence) and is
placed, and the fence comes too late to refuse it. The fence is what makes a
later NOT_FOUND final, so it must be confirmed first. Caught by
``test_the_held_post_arriving_before_any_of_your_requests_is_told_truly``.
"""


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Cancel and revoke, look up, then fence."""
    generation, revoked = cancel_here(conn, work_id)
    looked_up = {operation_key: settle(conn, operation_key, supplier_url)
                 for operation_key in uncertain_orders(conn, work_id)}
    fence_supplier(supplier_url, work_id, generation)
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
