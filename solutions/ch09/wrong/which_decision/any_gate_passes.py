"""WRONG ANSWER to exercise 09.3 (chapter 09): one passing gate is enough to resume.

The mistake: the gates are asked whether ANY passes, not whether all do. The
restock plan has one gate, where the two questions are the same. With two
gates, one passing and one failing (another file took a name the second
checks), a plan judged right is resumed; the runtime re-runs every gate,
refuses the resume (``GateFailed``) and the night moves nothing (C1). Caught
by ``test_drawn_plans_meet_the_consequences``.
"""


def which_decision(situation: Situation) -> str:
    """The runbook: the first question that applies decides."""
    if UNWIND in situation.decided:
        return UNWIND
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    if not any(situation.gates.values()):  # the mistake: all() is the rule
        return DAYLIGHT
    return RESUME
