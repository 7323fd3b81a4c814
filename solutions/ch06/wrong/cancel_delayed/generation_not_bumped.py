"""WRONG ANSWER to exercise 06.1 (chapter 06): the generation reported, not
written.

The mistake: the cancel is written by hand, status CANCELLED and the owner
cleared, and reports the generation the cancel should have (one more than
the holder's) without writing it to the work row. The supplier is fenced at
that number, so every request of the holder is refused there, and the
report reads right; but the shop's own row keeps the holder's generation, so
the cancel never superseded the claim in the shop (review 2026-12-02,
chapters 05-08, finding 12: a grader that trusted the report passed this).
Caught by ``test_the_cancel_is_durable_here_and_at_the_supplier``.
"""

from crashcourse import claims


def cancel_here(conn: sqlite3.Connection, work_id: str) -> tuple[int, int]:
    """CANCELLED by hand; the next generation reported, never written."""
    with immediate(conn):
        generation = claims.work_row(conn, work_id)["generation"] + 1
        conn.execute("UPDATE work SET status = 'CANCELLED', owner = 'operator',"
                     " expires = NULL WHERE id = :id", {"id": work_id})
        revoked = orders.revoke_unsent(conn, work_id)
    return generation, revoked
