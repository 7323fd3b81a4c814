"""WRONG ANSWER to exercise 04.1 (chapter 04): an inserted row is a payment.

The mistake: a kill at ``payment_inserted`` is predicted to leave one
payment, since the INSERT had run. But the transaction never committed: the
next opener of the file sees no row, nothing is consumed, and the replacement
commits the payment itself. Caught by
``test_prediction_matches_the_ledger[payment_inserted]``.
"""


def predict(boundary: str) -> dict:
    """The prediction for a kill at ``boundary`` on a budget of one payment."""
    if boundary in ("payment_inserted", "after_payment"):  # the row is there
        return {"payments_at_kill": 1, "charged_at_kill": 1,
                "replacement": "already_committed",
                "fresh_key": "budget_action_limit", "payments_final": 1}
    raise ValueError(f"unknown boundary {boundary!r}")
