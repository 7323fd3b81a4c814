"""The history is not read. Caught by ``test_an_interrupted_unwind_is_finished``."""


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
