"""A step in doubt means daylight. Caught by
``test_a_rename_in_doubt_and_the_plan_right`` and
``test_a_mail_in_doubt_and_the_plan_right`` and
``test_the_plan_is_wrong_and_nothing_irreversible_happened``."""


def which_decision(situation: Situation) -> str:
    if UNWIND in situation.decided:
        return UNWIND
    if situation.shown["in_doubt"] is not None:
        return DAYLIGHT  # the mistake: doubt is the probe's job, not a person's
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    if not all(situation.gates.values()):
        return DAYLIGHT
    return RESUME
