"""A failing gate always means daylight. Caught by
``test_the_plan_is_wrong_and_a_gate_fails``."""


def which_decision(situation: Situation) -> str:
    if UNWIND in situation.decided:
        return UNWIND
    if not all(situation.gates.values()):
        return DAYLIGHT  # the mistake: asked before whether the plan is wanted
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    return RESUME
