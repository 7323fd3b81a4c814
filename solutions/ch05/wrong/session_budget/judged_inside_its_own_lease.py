"""WRONG ANSWER to exercise 05.2 (chapter 05): judged at an instant of its choosing.

The mistake: the chapter's ``note`` is copied whole, ``now=claim.expires - 1``
and all. The chapter injects the instant to show the rule without waiting;
here it means the lease is judged one second before its own end, forever. A
holder paused past its lease resumes and reserves: nothing rewrote the row,
nobody claimed the work after it, and by its own count it is still inside
its lease. Every check that rewrites ``expires`` refuses it all the same.
Caught by ``test_a_lease_that_ran_out_on_the_clock_reserves_nothing``.
"""


def reserve(
    conn: sqlite3.Connection, claim: Claim, operation_key: str, amount_cents: int,
    ceiling_cents: int,
) -> bool:
    """Check the holder, sum what is reserved, insert: all in one transaction."""
    check_amount(amount_cents)
    with fence.fenced(conn, claim, "reserve", now=claim.expires - 1):
        reserved = conn.execute(
            "SELECT coalesce(sum(amount_cents), 0) FROM reservations").fetchone()[0]
        if reserved + amount_cents > ceiling_cents:
            return False
        conn.execute(
            "INSERT INTO reservations (operation_key, work_id, session, amount_cents)"
            " VALUES (:operation_key, :work_id, :session, :amount)",
            {"operation_key": operation_key, "work_id": claim.id,
             "session": claim.session, "amount": amount_cents})
    return True
