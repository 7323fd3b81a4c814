"""The outcome is written at once. Caught by ``test_predictions_on_paper``."""


def predict(k: int, boundary: str, plan) -> dict:
    """Steps before k are confirmed; step k's row depends on the boundary."""
    confirmed = k - 1 + (boundary == "after_outcome")
    in_doubt = int(boundary in ("after_intent", "after_action"))
    last_row = confirmed + in_doubt
    return {
        "confirmed": confirmed,
        "in_doubt": in_doubt,
        "not_started": len(plan.steps) - last_row,
        "irreversible_not_started": tuple(
            s.number for s in plan.steps if s.irreversible and s.number > last_row),
    }
