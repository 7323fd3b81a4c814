"""WRONG ANSWER to exercise 05.2 (chapter 05): sum and insert in two transactions.

The mistake: the reserved total is read in one fenced transaction and the
row inserted in a second one. Each transaction checks the holder, but the
write lock is let go in between: two sessions both read 0, both see
600 <= 1000, and both insert, 1,200 reserved against a ceiling of 1,000.
Caught by ``test_a_rival_at_any_statement_cannot_get_both_through``.
"""


def reserve(
    conn: sqlite3.Connection, claim: Claim, operation_key: str, amount_cents: int,
    ceiling_cents: int,
) -> bool:
    """Check the holder, sum what is reserved, insert: all in one transaction."""
    check_amount(amount_cents)  # bad input raises before the write lock is taken
    with fence.fenced(conn, claim, "reserve"):  # the check
        reserved = conn.execute(
            "SELECT coalesce(sum(amount_cents), 0) FROM reservations").fetchone()[0]
    if reserved + amount_cents > ceiling_cents:
        return False
    with fence.fenced(conn, claim, "reserve"):  # the write
        conn.execute(
            "INSERT INTO reservations (operation_key, work_id, session, amount_cents)"
            " VALUES (:operation_key, :work_id, :session, :amount)",
            {"operation_key": operation_key, "work_id": claim.id,
             "session": claim.session, "amount": amount_cents})
    return True
