"""WRONG ANSWER to exercise 07.3 (chapter 07): the action ran, so the step is done.

The mistake: a kill at ``after_action`` (or ``after_outcome``) is predicted
to leave step ``k`` confirmed, since its action ran. The journal cannot know
that: the outcome is written with the NEXT step's intent, so the step is in
doubt until then, or until a probe asks the target.
Caught by ``test_prediction_matches_a_real_kill[12-after_action]``.
"""


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
