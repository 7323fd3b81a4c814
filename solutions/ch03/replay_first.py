"""Exercise 03.1 (Kata 12): historical replay before new authorization."""

from crashcourse.services import payments
from crashcourse.store import immediate, opened


def issue_checked(path, key, order_id, amount_cents, currency) -> str:
    """Charge once per key, asking history before authority."""
    action = {"order_id": order_id, "amount_cents": amount_cents,
              "currency": currency}
    with opened(path) as conn, immediate(conn):
        recorded = payments.find_payment(conn, key)
        if recorded is not None:  # history: no new effect, no authority needed
            if recorded != action:
                raise payments.PaymentConflict(key, recorded, action)
            return "already_committed"
        terms = payments.require_approval(conn, action)  # a new effect: now
        payments.record_payment(conn, key, action, terms)
    return "committed"
