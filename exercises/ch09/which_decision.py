"""Exercise 09.3: write the runbook (chapter 09).

The person on the rota reads a ``Situation`` and takes one of three decisions
(``decisions.RESUME``, ``UNWIND``, ``DAYLIGHT``). Write the rule they follow.
PROMPT.md lists the cases and what the decision must leave behind in each
(C1-C6); the tests carry your decision out on a real killed worker's world
and read the rows, never your reasoning. Answer from the situation alone:
nothing here opens a file or asks a service.
"""

from __future__ import annotations

from typing import NamedTuple

from crashcourse.journal.decisions import DAYLIGHT, RESUME, UNWIND  # noqa: F401
from crashcourse.journal.plan import Plan


class Situation(NamedTuple):
    """Given: what the person deciding has in front of them."""

    plan: Plan  # the stored plan: which steps are irreversible, which are gates
    shown: dict  # decisions.shown(conn, task, plan): what the journal shows
    gates: dict  # {gate step number: passed when checked again NOW}
    decided: tuple  # the task's earlier decisions, oldest first
    plan_right: bool  # the person's judgment: is the plan's end state wanted?


def which_decision(situation: Situation) -> str:
    """RESUME, UNWIND or DAYLIGHT: the decision whose consequences meet C1-C6
    of PROMPT.md in every case it lists.

    ``situation.shown`` has ``journal`` (the counts), ``in_doubt`` (the step
    with an intent and no outcome, or None) and ``irreversible_done`` (the
    irreversible steps with an outcome); ``situation.plan.steps[n - 1]``
    says whether step n is ``irreversible`` or a ``gate``.
    """
    raise NotImplementedError("exercise 09.3: write the runbook")
