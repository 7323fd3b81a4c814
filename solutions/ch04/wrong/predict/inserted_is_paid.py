"""An inserted row is a payment. Caught by
``test_prediction_matches_the_ledger[payment_inserted]``."""


def predict(boundary: str) -> dict:
    if boundary == "before_payment":  # A never asked
        return {"payments_at_kill": 0, "worker_b": "committed",
                "a_replacement": "budget_action_limit", "paid_keys": ["pay-b"]}
    if boundary in ("payment_inserted", "after_payment"):  # the row is there
        return {"payments_at_kill": 1, "worker_b": "budget_action_limit",
                "a_replacement": "already_committed", "paid_keys": ["pay-a"]}
    raise ValueError(f"unknown boundary {boundary!r}")
