"""The total read in one fenced transaction, the row inserted in a second: both sessions
read 0, both insert, 1,200 against 1,000. Caught by
``test_a_rival_at_any_statement_cannot_get_both_through``."""


def reserve(conn, claim, operation_key, amount_cents, ceiling_cents):
    check_amount(amount_cents)
    with guarded(conn, claim):  # the check
        reserved = reserved_total(conn, claim)
    if reserved + amount_cents > ceiling_cents:
        return False
    with guarded(conn, claim):  # the write
        record(conn, claim, operation_key, amount_cents)
    return True
