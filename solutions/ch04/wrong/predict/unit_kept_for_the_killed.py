"""The killed worker's unit waits. Caught by
``test_prediction_matches_the_ledger[before_payment]``."""


def predict(boundary: str) -> dict:
    if boundary in ("before_payment", "payment_inserted"):  # A was first: its unit
        return {"payments_at_kill": 0, "worker_b": "budget_action_limit",
                "a_replacement": "committed", "paid_keys": ["pay-a"]}
    if boundary == "after_payment":
        return {"payments_at_kill": 1, "worker_b": "budget_action_limit",
                "a_replacement": "already_committed", "paid_keys": ["pay-a"]}
    raise ValueError(f"unknown boundary {boundary!r}")
