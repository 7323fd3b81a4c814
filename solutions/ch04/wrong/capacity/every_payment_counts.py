"""Every payment ever made counts. Caught by
``test_a_new_round_starts_after_the_last_payment``."""

from crashcourse.services.payments import budget


def room_for(conn, amount_cents: int, currency: str, round_start: float):
    """Why one more payment does not fit, or None: the runtime's own check."""
    return budget.shortfall(conn, amount_cents, currency)
