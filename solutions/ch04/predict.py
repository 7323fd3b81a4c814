"""Solution 04.1: who gets the last unit after a kill (chapter 04).

See EXPLANATION.md.
"""


def predict(boundary: str) -> dict:
    """The prediction for one unit left and worker A killed at ``boundary``."""
    if boundary in ("before_payment", "payment_inserted"):  # nothing committed
        return {"payments_at_kill": 0, "worker_b": "committed",
                "a_replacement": "budget_action_limit", "paid_keys": ["pay-b"]}
    if boundary == "after_payment":  # A's payment stands and used the unit
        return {"payments_at_kill": 1, "worker_b": "budget_action_limit",
                "a_replacement": "already_committed", "paid_keys": ["pay-a"]}
    raise ValueError(f"unknown boundary {boundary!r}")
