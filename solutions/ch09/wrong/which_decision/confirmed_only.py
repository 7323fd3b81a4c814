"""WRONG ANSWER to exercise 09.3 (chapter 09): only confirmed effects count.

The mistake: ``beyond_undo`` lists the irreversible steps the journal shows
as done (``irreversible_done``) and ignores the step in doubt. A mail whose
intent is written and whose outcome is not may have been accepted by the
provider: ``after_intent`` and ``after_action`` leave the same journal. With
the plan judged wrong, the answer calls for an unwind that would find the
mail sent and could only record it as a compensation. Caught by
``test_beyond_undo_on_the_gated_plan``, ``test_the_runbook_on_paper``
(``plan-wrong-mail-in-doubt``) and
``test_killed_after_the_supplier_mail_and_the_plan_is_wrong_daylight``.
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
