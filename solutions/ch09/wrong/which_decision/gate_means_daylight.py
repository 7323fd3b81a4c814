"""WRONG ANSWER to exercise 09.3 (chapter 09): a failing gate always means daylight.

The mistake: the gate is asked before the plan, so a plan judged wrong on a
drive where someone else filed a document under a planned name is handed
over instead of unwound. The unwind would have been safe: its restores are
compare-and-set and touch only files that still carry the names this run
gave them, never the other party's. The morning finds the wrong scheme
still on the drive. Caught by C4: ``test_the_plan_is_wrong_and_a_gate_fails``.
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
    if not all(situation.gates.values()):
        return DAYLIGHT  # the mistake: asked before whether the plan is wanted
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    return RESUME
