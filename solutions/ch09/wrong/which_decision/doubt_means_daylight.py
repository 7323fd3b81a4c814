"""A step in doubt means daylight. Caught by
``test_a_rename_in_doubt_and_the_plan_right`` and
``test_a_mail_in_doubt_and_the_plan_right`` and
``test_the_plan_is_wrong_and_nothing_irreversible_happened``."""


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The irreversible steps that are done or may be: confirmed, or in doubt."""
    done = [effect["step"] for effect in situation.shown["irreversible_done"]]
    doubt = situation.shown["in_doubt"]
    if doubt is not None and situation.plan.steps[doubt["step"] - 1].irreversible:
        done.append(doubt["step"])
    return tuple(sorted(done))


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
