"""The irreversible steps are the last ones. Caught by
``test_the_plan_decides_which_steps_are_irreversible``."""


def predict(k: int, boundary: str, plan) -> dict:
    """Steps before k are confirmed; step k's row depends on the boundary."""
    last_row = k - (boundary == "before_intent")
    in_doubt = int(last_row > 0)
    confirmed = last_row - in_doubt
    return {
        "confirmed": confirmed,
        "in_doubt": in_doubt,
        "not_started": len(plan.steps) - last_row,
        "irreversible_not_started": tuple(  # the summaries are mailed last
            s.number for s in plan.steps[-2:] if s.number > last_row),
    }
