"""Exercise 07.3: predict the journal after a kill (chapter 07).

The worker runs steps in order; each step passes four boundaries:
``before_intent``, ``after_intent``, ``after_action``, ``after_outcome``.
It commits once per step: step k's outcome is written in the same
transaction as step k+1's intent (chapter 07, "one commit per step").
"""

from __future__ import annotations


def predict(k: int, boundary: str, plan) -> dict:
    """What ``journal_status`` reports after a SIGKILL at step ``k``, ``boundary``.

    Return ``{"confirmed": int, "in_doubt": int, "not_started": int,
    "irreversible_not_started": tuple of step numbers}`` for ``plan``
    (a ``crashcourse.journal.plan.Plan``).
    """
    raise NotImplementedError("exercise 07.3: count before you look")
