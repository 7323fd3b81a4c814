"""Exercise 07.3, answered: predict the journal after a kill (chapter 07)."""

from __future__ import annotations


def predict(k: int, boundary: str, plan) -> dict:
    """One commit per step: an outcome is written with the next intent, so a
    fresh run killed at step k has k's row in doubt from its intent on, and
    k-1's before it (nothing at all before step 1)."""
    last_row = k - (boundary == "before_intent")
    in_doubt = int(last_row > 0)
    confirmed = last_row - in_doubt
    return {
        "confirmed": confirmed,
        "in_doubt": in_doubt,
        "not_started": len(plan.steps) - last_row,
        "irreversible_not_started": tuple(
            s.number for s in plan.steps if s.irreversible and s.number > last_row),
    }
