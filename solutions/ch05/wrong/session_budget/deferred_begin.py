"""WRONG ANSWER to exercise 05.2 (chapter 05): one transaction, begun DEFERRED.

The mistake: the check, the sum and the insert are in one transaction, but
it opens with a plain ``BEGIN``, which takes no lock until the first write.
Alone it is right. With the other session's reservation committed between
this one's sum and its insert, SQLite cannot let the insert write on top of
a sum it has since overtaken: the INSERT fails with "database is locked"
however long the busy timeout, and the worker crashes instead of answering.
``BEGIN IMMEDIATE`` (what ``fence.fenced`` opens) takes the lock before the
first read. Caught by ``test_a_rival_at_any_statement_cannot_get_both_through``.
"""


def reserve(
    conn: sqlite3.Connection, claim: Claim, operation_key: str, amount_cents: int,
    ceiling_cents: int,
) -> bool:
    """Check the holder, sum what is reserved, insert: all in one transaction."""
    check_amount(amount_cents)  # bad input raises before the transaction
    conn.execute("BEGIN")  # one transaction; the lock comes with the first write
    try:
        fence.assert_current(conn, claim)
        reserved = conn.execute(
            "SELECT coalesce(sum(amount_cents), 0) FROM reservations").fetchone()[0]
        if reserved + amount_cents > ceiling_cents:
            conn.execute("ROLLBACK")
            return False
        conn.execute(
            "INSERT INTO reservations (operation_key, work_id, session, amount_cents)"
            " VALUES (:operation_key, :work_id, :session, :amount)",
            {"operation_key": operation_key, "work_id": claim.id,
             "session": claim.session, "amount": amount_cents})
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return True
