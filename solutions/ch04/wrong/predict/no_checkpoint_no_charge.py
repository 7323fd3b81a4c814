"""No checkpoint, nothing consumed. Caught by
``test_prediction_matches_the_ledger[after_payment]``."""


def predict(boundary: str) -> dict:
    if boundary in ("before_payment", "payment_inserted"):  # nothing committed
        return {"payments_at_kill": 0, "worker_b": "committed",
                "a_replacement": "budget_action_limit", "paid_keys": ["pay-b"]}
    if boundary == "after_payment":  # no checkpoint: the unit was not used up
        return {"payments_at_kill": 1, "worker_b": "committed",
                "a_replacement": "already_committed",
                "paid_keys": ["pay-a", "pay-b"]}
    raise ValueError(f"unknown boundary {boundary!r}")
