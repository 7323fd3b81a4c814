"""WRONG ANSWER to exercise 06.1 (chapter 06): the runtime's settlement, called.

The mistake, for this exercise: ``orders.settle_cancelled`` does the whole
settlement (fence, then lookup), and the exercise is to write it. The
grader swaps that function's code out, so a reference to it taken under
another name fails as well (without that swap this answer passes every
test). Caught by
``test_unsent_revoked_sent_discovered_nothing_resent``.
"""

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
