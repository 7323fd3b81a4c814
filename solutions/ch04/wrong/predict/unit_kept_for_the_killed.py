"""WRONG ANSWER to exercise 04.1 (chapter 04): the killed worker's unit waits.

The mistake: A had started to pay when it was killed, so the last unit is
predicted to be kept for it: B is refused and A's replacement pays. Nothing
keeps it. A transaction that never committed holds nothing once its process
is gone, and the allowance is counted from committed rows: B, asking first,
takes the unit, and A's replacement is refused. Caught by
``test_prediction_matches_the_ledger[before_payment]`` and
``[payment_inserted]``.
"""


def predict(boundary: str) -> dict:
    """The prediction for one unit left and worker A killed at ``boundary``."""
    if boundary in ("before_payment", "payment_inserted"):  # A was first: its unit
        return {"payments_at_kill": 0, "worker_b": "budget_action_limit",
                "a_replacement": "committed", "paid_keys": ["pay-a"]}
    if boundary == "after_payment":
        return {"payments_at_kill": 1, "worker_b": "budget_action_limit",
                "a_replacement": "already_committed", "paid_keys": ["pay-a"]}
    raise ValueError(f"unknown boundary {boundary!r}")
