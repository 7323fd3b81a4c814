"""Only confirmed effects count. Caught by
``test_the_plan_is_wrong_and_the_supplier_mail_was_accepted``."""


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The irreversible steps the journal shows as done."""
    return tuple(e["step"] for e in situation.shown["irreversible_done"])
