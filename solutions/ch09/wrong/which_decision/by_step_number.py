"""WRONG ANSWER to exercise 09.3 (chapter 09): the mails are steps 42 and 43.

The mistake: the irreversible steps are read off the restock plan as it
happens to be ordered (its two mails last) instead of from the plan's own
flags. A plan that mails the supplier at step 3 is unwound with the mail
already accepted, and the night writes a compensation record. Caught by C5:
``test_a_plan_that_mails_early_and_is_wrong``.
"""


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The mails, by the restock plan's numbering."""
    done = [e["step"] for e in situation.shown["irreversible_done"]]
    doubt = situation.shown["in_doubt"]
    if doubt is not None and doubt["step"] in (42, 43):  # the mistake
        done.append(doubt["step"])
    return tuple(sorted(s for s in done if s in (42, 43)))


def which_decision(situation: Situation) -> str:
    if UNWIND in situation.decided:
        return UNWIND
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    if not all(situation.gates.values()):
        return DAYLIGHT
    return RESUME
