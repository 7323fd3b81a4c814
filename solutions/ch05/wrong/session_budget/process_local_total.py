"""WRONG ANSWER to exercise 05.2 (chapter 05): the account's total kept in the process.

The mistake: the reserved total is a dictionary in the worker's memory (an
attribute of ``reserve``), one entry per database file, checked and raised
inside the fenced transaction; the rows are written but never summed. Two
connections in one process share the dictionary, so every race between them is
won: the second sees the first's 600. Two worker processes each start from 0
and both reserve 600 of 1,000, and a restarted worker forgets everything
reserved before it.
Caught by ``test_two_processes_cannot_both_get_through``.
"""


def reserve(
    conn: sqlite3.Connection, claim: Claim, operation_key: str, amount_cents: int,
    ceiling_cents: int,
) -> bool:
    """Check the holder, sum what is reserved, insert: all in one transaction."""
    check_amount(amount_cents)
    reserved = reserve.__dict__.setdefault("reserved", {})  # this process's memory
    account = conn.execute("PRAGMA database_list").fetchone()[2]
    with fence.fenced(conn, claim, "reserve"):
        if reserved.get(account, 0) + amount_cents > ceiling_cents:
            return False
        reserved[account] = reserved.get(account, 0) + amount_cents
        conn.execute(
            "INSERT INTO reservations (operation_key, work_id, session, amount_cents)"
            " VALUES (:operation_key, :work_id, :session, :amount)",
            {"operation_key": operation_key, "work_id": claim.id,
             "session": claim.session, "amount": amount_cents})
    return True
