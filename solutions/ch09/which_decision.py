"""Exercise 09.3, answered: which decision does the runbook call for? (chapter 09)

The person on the rota reads a ``Situation`` and takes one of three decisions
(``decisions.RESUME``, ``UNWIND``, ``DAYLIGHT``). The runbook asks four
questions in order; the first that applies decides (PROMPT.md).
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
    if UNWIND in situation.decided:
        return UNWIND  # finish it; an unwound task is never resumed
    if not all(situation.gates.values()):
        return DAYLIGHT  # the world is not the one the plan was made for
    if not situation.plan_right:
        return DAYLIGHT if beyond_undo(situation) else UNWIND
    return RESUME  # a step in doubt is settled by its probe, not by a person
