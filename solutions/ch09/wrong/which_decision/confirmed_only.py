"""WRONG ANSWER to exercise 09.3 (chapter 09): only confirmed effects count.

The mistake: the irreversible steps "already done" are those the journal
shows with an outcome, and the step in doubt is ignored. A mail whose intent
is written and whose outcome is not may have been accepted: ``after_intent``
and ``after_action`` leave the same journal. With the plan judged wrong this
answer unwinds, the unwind's probe finds the mail, and the night writes a
compensation record. Caught by C5:
``test_the_plan_is_wrong_and_the_supplier_mail_was_accepted``.
"""


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The irreversible steps the journal shows as done."""
    return tuple(e["step"] for e in situation.shown["irreversible_done"])


def which_decision(situation: Situation) -> str:
    if UNWIND in situation.decided:
        return UNWIND
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    if not all(situation.gates.values()):
        return DAYLIGHT
    return RESUME
