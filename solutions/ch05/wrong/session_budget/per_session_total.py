"""WRONG ANSWER to exercise 05.2 (chapter 05): the ceiling counted per session.

The mistake: only the reservations of the claim's own session are summed, as
if the session rule guarded money. The flour request (``counter``) and the
sugar request (``back-office``) are different sessions by design, so each
sees 0 reserved and both 600-cent reservations go through against the one
account's 1,000. Caught by ``test_only_the_affordable_reservation_is_admitted``
(and the race test).
"""


def reserve(
    conn: sqlite3.Connection, claim: Claim, operation_key: str, amount_cents: int,
    ceiling_cents: int,
) -> bool:
    """Check the holder, sum what is reserved, insert: all in one transaction."""
    check_amount(amount_cents)  # bad input raises before the write lock is taken
    with fence.fenced(conn, claim, "reserve"):
        reserved = conn.execute(
            "SELECT coalesce(sum(amount_cents), 0) FROM reservations"
            " WHERE session = :session", {"session": claim.session}).fetchone()[0]
        if reserved + amount_cents > ceiling_cents:
            return False
        conn.execute(
            "INSERT INTO reservations (operation_key, work_id, session, amount_cents)"
            " VALUES (:operation_key, :work_id, :session, :amount)",
            {"operation_key": operation_key, "work_id": claim.id,
             "session": claim.session, "amount": amount_cents})
    return True
