"""WRONG ANSWER to exercise 05.2: only the claim's own session's reservations
summed. The flour (``counter``) and the sugar (``back-office``) are two
sessions: each sees 0, and both 600s go through against one 1,000. Caught by
``test_only_the_affordable_reservation_is_admitted``.
"""


def reserved_total(conn, claim):
    return conn.execute(
        "SELECT coalesce(sum(amount_cents), 0) FROM reservations"
        " WHERE session = :session", {"session": claim.session}).fetchone()[0]
