"""Exercise 09.3: which decision does the runbook call for? (chapter 09)

The person on the rota reads a ``Situation`` and takes one of three decisions
(``decisions.RESUME``, ``UNWIND``, ``DAYLIGHT``). The runbook asks four
questions in order; the first that applies decides (PROMPT.md). Answer from
the situation alone: nothing here opens a file or asks a service.
"""

from __future__ import annotations

from typing import NamedTuple

from crashcourse.decisions import DAYLIGHT, RESUME, UNWIND  # noqa: F401
from crashcourse.plan import Plan


class Situation(NamedTuple):
    """Given: what the person deciding has in front of them."""

    plan: Plan  # the stored plan: which steps are irreversible, which are gates
    shown: dict  # decisions.shown(conn, task, plan): what the journal shows
    gates: dict  # {gate step number: passed when checked again NOW}
    decided: tuple  # the task's earlier decisions, oldest first
    plan_right: bool  # the person's judgment: is the plan's end state wanted?


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The numbers of the irreversible steps that are done or MAY be done,
    ascending: every step in ``shown["irreversible_done"]``, and the step in
    doubt (``shown["in_doubt"]``, or None) if the PLAN marks it irreversible.
    """
    raise NotImplementedError("exercise 09.3: what can no unwind take back?")


def which_decision(situation: Situation) -> str:
    """RESUME, UNWIND or DAYLIGHT, by the runbook in PROMPT.md:

    1. an unwind was decided before: UNWIND (finish it);
    2. a gate fails now: DAYLIGHT;
    3. the plan is wrong: UNWIND, or DAYLIGHT if ``beyond_undo`` is not empty;
    4. otherwise: RESUME.
    """
    raise NotImplementedError("exercise 09.3: ask the runbook's questions in order")
