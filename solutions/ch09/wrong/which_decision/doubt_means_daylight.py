"""WRONG ANSWER to exercise 09.3 (chapter 09): a step in doubt wakes nobody up.

The mistake, the other way round: a step in doubt is read as "nobody knows
what happened", so the task goes to daylight. But the journal bounds the
doubt to ONE step, and that step's probe asks its target (the drive by file
id, the provider by key): resume settles it without a person. Handing every
killed run to the day shift turns each crash into an incident. Caught by
``test_the_runbook_on_paper`` (``rename-in-doubt``, ``mail-in-doubt``) and
``test_killed_mid_rename_resume``.
"""

from __future__ import annotations

from typing import NamedTuple

from crashcourse.decisions import DAYLIGHT, RESUME, UNWIND
from crashcourse.plan import Plan


class Situation(NamedTuple):
    """Given: what the person deciding has in front of them."""

    plan: Plan  # the stored plan: which steps are irreversible, which are gates
    shown: dict  # decisions.shown(conn, task, plan): what the journal shows
    gates: dict  # {gate step number: passed when checked again NOW}
    decided: tuple  # the task's earlier decisions, oldest first
    plan_right: bool  # the person's judgment: is the plan's end state wanted?


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The irreversible steps that are done or may be: confirmed, or in doubt."""
    done = [effect["step"] for effect in situation.shown["irreversible_done"]]
    doubt = situation.shown["in_doubt"]
    if doubt is not None and situation.plan.steps[doubt["step"] - 1].irreversible:
        done.append(doubt["step"])  # the journal cannot tell: it may have happened
    return tuple(sorted(done))


def which_decision(situation: Situation) -> str:
    """The runbook's decision: the first question that applies decides."""
    if situation.shown["in_doubt"] is not None:
        return DAYLIGHT  # nobody knows what the last step did
    if UNWIND in situation.decided:
        return UNWIND  # finish it; an unwound task is never resumed
    if not all(situation.gates.values()):
        return DAYLIGHT  # the world is not the one the plan was made for
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    return RESUME  # a step in doubt is settled by its probe, not by a person
