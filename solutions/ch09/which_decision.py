"""Exercise 09.3, answered: the runbook, written from its consequences (chapter 09).

The person on the rota reads a ``Situation`` and takes one of three decisions
(``decisions.RESUME``, ``UNWIND``, ``DAYLIGHT``). PROMPT.md lists what the
night's decision must leave behind (C1-C6); this runbook is one that meets
them all, and EXPLANATION.md says why each question sits where it does.
"""

from __future__ import annotations

from typing import NamedTuple

from crashcourse.journal.decisions import DAYLIGHT, RESUME, UNWIND
from crashcourse.journal.plan import Plan


class Situation(NamedTuple):
    """Given: what the person deciding has in front of them."""

    plan: Plan  # the stored plan: which steps are irreversible, which are gates
    shown: dict  # decisions.shown(conn, task, plan): what the journal shows
    gates: dict  # {gate step number: passed when checked again NOW}
    decided: tuple  # the task's earlier decisions, oldest first
    plan_right: bool  # the person's judgment: is the plan's end state wanted?


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The irreversible steps that are done or may be: confirmed, or in doubt
    (the journal cannot tell a kill after the intent from one after the
    request). Read from the plan's flags, not from step numbers."""
    done = [effect["step"] for effect in situation.shown["irreversible_done"]]
    doubt = situation.shown["in_doubt"]
    if doubt is not None and situation.plan.steps[doubt["step"] - 1].irreversible:
        done.append(doubt["step"])
    return tuple(sorted(done))


def which_decision(situation: Situation) -> str:
    """The runbook: the first question that applies decides."""
    if UNWIND in situation.decided:
        return UNWIND  # C6: finish it; the runtime never resumes it (C1)
    if not situation.plan_right:  # C4: no further step, back if it can go back
        return DAYLIGHT if beyond_undo(situation) else UNWIND  # C5 at night
    if not all(situation.gates.values()):
        return DAYLIGHT  # C1: a resume would be refused; C3: never undone
    return RESUME  # C3: a step in doubt is settled by its probe, not a person
