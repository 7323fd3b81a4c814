"""WRONG ANSWER to exercise 07.3 (chapter 07): the irreversible steps are the last ones.

The mistake: the provably unstarted irreversible steps are taken to be the
plan's last two steps after the last row, true of the restock plan (ordered
by ``order_plan``) and of no plan in general. Read the flags of the plan you
are given. Caught by ``test_the_plan_decides_which_steps_are_irreversible``.
"""


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
