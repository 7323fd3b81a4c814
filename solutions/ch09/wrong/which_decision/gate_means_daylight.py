"""A failing gate always means daylight. Caught by
``test_the_plan_is_wrong_and_a_gate_fails``."""


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
    if not all(situation.gates.values()):
        return DAYLIGHT  # the mistake: asked before whether the plan is wanted
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    return RESUME
