"""WRONG ANSWER to exercise 04.2 (chapter 04): every payment ever made counts.

The mistake: the round is ignored, so the check is the chapter's own
``budget.shortfall``, imported and called. Last round's payment still holds
the allowance, and the first payment of a new round is refused. Caught by
``test_a_new_round_starts_after_the_last_payment`` and the earlier-round cases.
"""


from crashcourse.services.payments import budget


def room_for(conn, amount_cents: int, currency: str, round_start: float):
    """Why one more payment does not fit, or None: the runtime's own check."""
    return budget.shortfall(conn, amount_cents, currency)
