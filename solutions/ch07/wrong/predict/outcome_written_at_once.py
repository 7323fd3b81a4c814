"""WRONG ANSWER to exercise 07.3 (chapter 07): the outcome is written at once.

The mistake: each step is taken to commit its outcome right after its
action, so a kill at ``after_outcome`` leaves step ``k`` confirmed and one at
``before_intent`` leaves nothing in doubt. The journal commits once per step:
the outcome waits for the next step's intent. Caught by
``test_predictions_on_paper`` and the real kills at step 42's
``before_intent`` and step 7's ``after_outcome``.
"""


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
