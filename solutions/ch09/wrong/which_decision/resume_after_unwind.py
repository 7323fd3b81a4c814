"""The history is not read. Caught by ``test_an_interrupted_unwind_is_finished``."""


def which_decision(situation: Situation) -> str:
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    if not all(situation.gates.values()):
        return DAYLIGHT
    return RESUME  # the mistake: situation.decided is never read
