"""A correct answer in another shape: inside the same fenced transaction (the
write lock first), ONE ``INSERT ... SELECT`` that writes the reservation only
if the account's total leaves room; whether a row was written says whether
it was admitted."""


def reserve(
    conn: sqlite3.Connection, claim: Claim, operation_key: str, amount_cents: int,
    ceiling_cents: int,
) -> bool:
    check_amount(amount_cents)
    with guarded(conn, claim):
        written = conn.execute(
            "INSERT INTO reservations (operation_key, work_id, session, amount_cents)"
            " SELECT :operation_key, :work_id, :session, :amount"
            " WHERE (SELECT coalesce(sum(amount_cents), 0) FROM reservations)"
            " + :amount <= :ceiling",
            {"operation_key": operation_key, "work_id": claim.id,
             "session": claim.session, "amount": amount_cents,
             "ceiling": ceiling_cents}).rowcount
    return written == 1
