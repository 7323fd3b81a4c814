"""The held outcome is counted nowhere. Caught by
``test_the_plan_decides_which_steps_are_irreversible`` and
``test_every_step_is_counted_once[before_intent]``."""


def predict(k: int, boundary: str, plan) -> dict:
    """Steps before k are confirmed; step k's row depends on the boundary."""
    last_row = k - (boundary == "before_intent")
    in_doubt = int(boundary != "before_intent")
    confirmed = k - 1 if in_doubt else max(k - 2, 0)
    return {
        "confirmed": confirmed,
        "in_doubt": in_doubt,
        "not_started": len(plan.steps) - last_row,
        "irreversible_not_started": tuple(
            s.number for s in plan.steps if s.irreversible and s.number > last_row),
    }
