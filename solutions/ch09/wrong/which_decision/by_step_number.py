"""The mails are steps 42 and 43. Caught by
``test_a_plan_that_mails_early_and_is_wrong``."""


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The mails, by the restock plan's numbering."""
    done = [e["step"] for e in situation.shown["irreversible_done"]]
    doubt = situation.shown["in_doubt"]
    if doubt is not None and doubt["step"] in (42, 43):  # the mistake
        done.append(doubt["step"])
    return tuple(sorted(s for s in done if s in (42, 43)))
