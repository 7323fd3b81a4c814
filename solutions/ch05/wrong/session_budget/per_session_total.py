"""Only the claim's own session's reservations summed. Caught by
``test_only_the_affordable_reservation_is_admitted``."""


def reserved_total(conn, claim):
    return conn.execute(
        "SELECT coalesce(sum(amount_cents), 0) FROM reservations"
        " WHERE session = :session", {"session": claim.session}).fetchone()[0]
