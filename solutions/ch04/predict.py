"""Solution 04.1: what remains after each kill point (chapter 04).

See EXPLANATION.md.
"""


def predict(boundary: str) -> dict:
    """The prediction for a kill at ``boundary`` on a budget of one payment."""
    if boundary == "payment_inserted":  # the row was never committed
        return {"payments_at_kill": 0, "charged_at_kill": 0,
                "replacement": "committed", "fresh_key": "budget_action_limit",
                "payments_final": 1}
    if boundary == "after_payment":  # committed: it stands, and it consumed
        return {"payments_at_kill": 1, "charged_at_kill": 1,
                "replacement": "already_committed",
                "fresh_key": "budget_action_limit", "payments_final": 1}
    raise ValueError(f"unknown boundary {boundary!r}")
