"""WRONG ANSWER to exercise 04.1 (chapter 04): no checkpoint, nothing consumed.

The mistake: after a kill at ``after_payment`` the worker never wrote its
checkpoint, so the unit is predicted to be still free: the replacement's
replay "finishes" the task and a fresh key pays a second time. The allowance
is derived from the service's committed payments, not from the worker's
records: the payment stands, it consumed the one unit, and the fresh key is
refused. Caught by ``test_prediction_matches_the_ledger[after_payment]``.
"""


def predict(boundary: str) -> dict:
    """The prediction for a kill at ``boundary`` on a budget of one payment."""
    if boundary == "payment_inserted":  # the row was never committed
        return {"payments_at_kill": 0, "charged_at_kill": 0,
                "replacement": "committed", "fresh_key": "budget_action_limit",
                "payments_final": 1}
    if boundary == "after_payment":  # no checkpoint: the unit was not used up
        return {"payments_at_kill": 1, "charged_at_kill": 0,
                "replacement": "already_committed", "fresh_key": "committed",
                "payments_final": 2}
    raise ValueError(f"unknown boundary {boundary!r}")
