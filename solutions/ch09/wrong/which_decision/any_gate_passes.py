"""One passing gate is enough to resume. Caught by
``test_drawn_plans_meet_the_consequences``."""


def which_decision(situation: Situation) -> str:
    if UNWIND in situation.decided:
        return UNWIND
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    if not any(situation.gates.values()):  # the mistake: all() is the rule
        return DAYLIGHT
    return RESUME
