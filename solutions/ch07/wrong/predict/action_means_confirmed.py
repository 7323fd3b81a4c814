"""The action ran, so the step is done. Caught by
``test_prediction_matches_a_real_kill[12-after_action]``."""


def predict(k: int, boundary: str, plan) -> dict:
    """Steps before k are confirmed; step k's row depends on the boundary."""
    last_row = k - (boundary == "before_intent")
    acted = boundary in ("after_action", "after_outcome")
    in_doubt = int(last_row > 0 and not acted)
    confirmed = last_row - in_doubt
    return {
        "confirmed": confirmed,
        "in_doubt": in_doubt,
        "not_started": len(plan.steps) - last_row,
        "irreversible_not_started": tuple(
            s.number for s in plan.steps if s.irreversible and s.number > last_row),
    }
