"""WRONG ANSWER to exercise 09.3 (chapter 09): a step in doubt means daylight.

The mistake: "nobody knows what the last step did, so wake nobody and do
nothing". The journal bounds the doubt to one step and the resume settles
that step with its probe, so every killed run handed to the day shift is a
task left unfinished for no reason. Caught by C3 (a plan judged right, its
gates passing, ends finished): ``test_a_rename_in_doubt_and_the_plan_right``,
``test_a_mail_in_doubt_and_the_plan_right`` and the hand-over's morning; and
by C4 where a wrong plan with only a rename in doubt is left on the drive
(``test_the_plan_is_wrong_and_nothing_irreversible_happened``).
"""


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
