"""WRONG ANSWER to exercise 05.2 (chapter 05): only running work's reservations count.

The mistake: the sum joins the reservations to their work and keeps the
RUNNING rows, as if a reservation belonged to the claim that made it. The
money does not come back when the order is finished: after the flour request
is DONE, its 600 drop out of the sum and the sugar request's 600 go through,
1,200 reserved against 1,000. Caught by
``test_a_finished_order_still_holds_its_reservation``.
"""


def reserve(
    conn: sqlite3.Connection, claim: Claim, operation_key: str, amount_cents: int,
    ceiling_cents: int,
) -> bool:
    """Check the holder, sum what is reserved, insert: all in one transaction."""
    check_amount(amount_cents)
    with fence.fenced(conn, claim, "reserve"):
        reserved = conn.execute(
            "SELECT coalesce(sum(r.amount_cents), 0) FROM reservations AS r"
            " JOIN work AS w ON w.id = r.work_id WHERE w.status = 'RUNNING'"
        ).fetchone()[0]
        if reserved + amount_cents > ceiling_cents:
            return False
        conn.execute(
            "INSERT INTO reservations (operation_key, work_id, session, amount_cents)"
            " VALUES (:operation_key, :work_id, :session, :amount)",
            {"operation_key": operation_key, "work_id": claim.id,
             "session": claim.session, "amount": amount_cents})
    return True
