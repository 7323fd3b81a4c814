"""WRONG ANSWER to exercise 07.3 (chapter 07): step k never confirmed.

The mistake: the steps before ``k`` are confirmed and step ``k`` is counted
as in doubt or started, but a kill at ``after_outcome`` still leaves step
``k`` out of the confirmed count, although its outcome row was committed.
The three counts then add up to one step fewer than the plan has. Caught by
``test_predictions_on_paper`` and ``test_every_step_is_counted_once``.
"""

from __future__ import annotations


def predict(k: int, boundary: str, plan) -> dict:
    """Steps before k are confirmed; step k's row depends on the boundary."""
    confirmed = k - 1  # the steps before k
    in_doubt = int(boundary in ("after_intent", "after_action"))
    last_row = k - (boundary == "before_intent")
    return {
        "confirmed": confirmed,
        "in_doubt": in_doubt,
        "not_started": len(plan.steps) - last_row,
        "irreversible_not_started": tuple(
            s.number for s in plan.steps if s.irreversible and s.number > last_row),
    }
