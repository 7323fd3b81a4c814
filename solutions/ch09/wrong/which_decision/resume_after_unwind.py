"""WRONG ANSWER to exercise 09.3 (chapter 09): the history is not read.

The mistake: the decision looks only at the journal, the gates and the
person's judgment now. After an unwind, a person who has changed their mind
is told to resume, which the runtime refuses (``DecisionRefused``: an
unwound task is never resumed), and the half-finished unwind stays half
finished. Caught by C1 and C6: ``test_an_interrupted_unwind_is_finished``.
"""


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The irreversible steps that are done or may be: confirmed, or in doubt."""
    done = [effect["step"] for effect in situation.shown["irreversible_done"]]
    doubt = situation.shown["in_doubt"]
    if doubt is not None and situation.plan.steps[doubt["step"] - 1].irreversible:
        done.append(doubt["step"])
    return tuple(sorted(done))


def which_decision(situation: Situation) -> str:
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    if not all(situation.gates.values()):
        return DAYLIGHT
    return RESUME  # the mistake: situation.decided is never read
