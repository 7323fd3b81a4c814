"""WRONG ANSWER to exercise 04.1 (chapter 04): no checkpoint, nothing consumed.

The mistake: after a kill at ``after_payment`` A never wrote its checkpoint,
so the unit is predicted to be still free: B pays, and A's replacement finds
its own payment and replays it. The allowance is derived from the service's
committed payments, not from the worker's records: A's payment stands, it
used the one unit, and B is refused. Caught by
``test_prediction_matches_the_ledger[after_payment]``.
"""


def predict(boundary: str) -> dict:
    """The prediction for one unit left and worker A killed at ``boundary``."""
    if boundary in ("before_payment", "payment_inserted"):  # nothing committed
        return {"payments_at_kill": 0, "worker_b": "committed",
                "a_replacement": "budget_action_limit", "paid_keys": ["pay-b"]}
    if boundary == "after_payment":  # no checkpoint: the unit was not used up
        return {"payments_at_kill": 1, "worker_b": "committed",
                "a_replacement": "already_committed",
                "paid_keys": ["pay-a", "pay-b"]}
    raise ValueError(f"unknown boundary {boundary!r}")
