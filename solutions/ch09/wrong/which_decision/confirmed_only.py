"""Only confirmed effects count. Caught by
``test_the_plan_is_wrong_and_the_supplier_mail_was_accepted``."""


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
