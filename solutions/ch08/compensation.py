"""Exercise 08.3, answered: the compensation plan of a cancelled workflow
(chapter 08).

The plan is read from rows, a clock and, where the rows cannot say, the
service's answer. What a step needs depends on one question, "does its
effect exist, and can that still change?". The rows answer it for a step
done, refused or never attempted, and for an attempt never admitted (the
cancel moved the version, so that call can never leave). For an admitted
call the caller brings the probe's answer (``probed``), and what a "no"
proves depends on the service. The supplier takes the token: the cancel's
fence is raised there before the probe (``FENCED``), so "no such order" is
final, lease or no lease. The payment service and the mail provider take no
token: a holder paused after its admission may still charge or send, for as
long as its pause lasts, so while its lease is live nobody asks, and after
it a "no" only means "not yet": the step stays in doubt until a probe finds
the effect (issue 29). An effect that exists gets its step's undo; the
release has its own operation key, derived from the workflow, the step, the
action ``release`` and the order it releases, so whoever carries the plan
out, as often as they do, asks the supplier for the same one release.
"""

from __future__ import annotations

import sqlite3

from crashcourse import store, workflow
from crashcourse.effects import operation_key
from crashcourse.workflow import steps as workflow_steps
from crashcourse.workflow.steps import (
    CANNOT_UNDO,
    DONE,
    IN_DOUBT,
    NEEDS_PERSON,
    NOTHING_TO_UNDO,
    UNDONE,
)

# What the runtime does about each step's effect once it exists: its
# ``action``, and the ``status`` the compensation row gets.
UNDO = {
    "reserve": ("released", UNDONE),  # the supplier takes the reservation back
    "charge": ("refund_owed", NEEDS_PERSON),  # no refund call: a person decides
    "mail": ("cannot_unsend", CANNOT_UNDO),  # a sent mail stays sent
}
NOTHING = ("none", NOTHING_TO_UNDO)  # no effect: nothing to undo
WAIT = ("wait", IN_DOUBT)  # may be in flight, or still to come: no row yet
# The steps whose service takes the fencing token: ``compensate`` raises the
# cancel's fence there before it probes, so no earlier call can land after.
FENCED = {"reserve"}
NOTES = {
    "released": "release the reservation at the supplier under its own key",
    "refund_owed": "the payment stays made: a person decides about a refund",
    "cannot_unsend": "the confirmation was sent and cannot be unsent",
    "none": "no effect exists: nothing to undo",
    "wait": "its call may be in flight or still to come: in doubt until a"
            " probe finds its effect",
}


def compensation_plan(conn: sqlite3.Connection, workflow_id: str,
                      probed: dict | None = None, now: float | None = None
                      ) -> list[dict]:
    """What each step of a cancelled (or failed) workflow needs, from its
    rows, the lease clock (``now``, else the store's) and the probes of the
    steps that need one; writes nothing (chapter 08)."""
    state = workflow.read(conn, workflow_id)["state"]  # KeyError if unknown
    if state not in (workflow.CANCELLED, workflow.FAILED):
        raise ValueError(f"workflow {workflow_id!r} is {state}: no compensation")
    at = store.now(conn, now)
    steps = listed(workflow_steps.progress(conn, workflow_id))
    doubt = {s["step"]: fate_in_doubt(s, at) for s in steps
             if s["status"] == IN_DOUBT}
    answers = check_probed(probed, set(doubt),
                           {name for name, fate in doubt.items() if fate is None})
    return [entry(workflow_id, step, *settled(step, doubt, answers))
            for step in steps]


def listed(steps: list[dict]) -> list[dict]:
    """Every step of the plan, attempted or not: the person reads the plan,
    and a step missing from it reads as forgotten."""
    return steps


def settled(step: dict, doubt: dict, answers: dict) -> tuple[str, str]:
    """(action, status) for one step: the rows' fate of a step in doubt,
    whatever a probe says; an effect done or found, its undo; an unfenced
    call not found, wait ("not found" is "not yet"); else nothing to undo."""
    name = step["step"]
    if doubt.get(name) is not None:
        return doubt[name]
    if step["status"] == DONE or answers.get(name, False):
        return UNDO[name]
    if name in doubt and name not in FENCED:
        return WAIT
    return NOTHING


def release_key(workflow_id: str, step: str, order_key: str) -> str:
    """The release's own operation key: a second effect, its own key."""
    return operation_key(workflow_id, step, "release", {"order": order_key})


def entry(workflow_id: str, step: dict, action: str, status: str) -> dict:
    """One step's line of the plan."""
    key = step["operation_key"]
    undo_key = (release_key(workflow_id, step["step"], key)
                if action == "released" else None)
    return {"step": step["step"], "operation_key": key, "action": action,
            "status": status, "compensation_key": undo_key,
            "note": NOTES[action]}


def fate_in_doubt(step: dict, at: float) -> tuple | None:
    """A step in doubt settled by its rows, or None where the probe is asked:
    no attempt since its last outcome admitted, nothing to undo (the cancel
    moved the version: ``admit`` refuses it for ever); an admitted call at a
    fenced service, None (the probe comes after the fence); elsewhere, an
    admitted call whose lease is live at ``at``, wait; after its lease, None."""
    admitted = [a for a in step["attempts"] if a["admitted_at"] is not None]
    if not admitted:
        return NOTHING
    if step["step"] in FENCED:
        return None
    if max(a["expires"] for a in admitted) > at:
        return WAIT
    return None


def check_probed(probed: dict | None, in_doubt: set[str], needed: set[str]
                 ) -> dict:
    """A bool answer for every step ``needed``, answers only for steps in
    doubt (the others are ignored); else ValueError (chapter 08)."""
    answers = {} if probed is None else probed
    if not isinstance(answers, dict):
        raise TypeError("probed must be a dict of step -> bool")
    if not needed <= set(answers) <= in_doubt:
        raise ValueError(f"probe answers are needed for {sorted(needed)} and"
                         f" allowed for the steps in doubt {sorted(in_doubt)},"
                         f" got {sorted(answers)}")
    if not all(isinstance(answer, bool) for answer in answers.values()):
        raise ValueError("each probe answer must be a bool")
    return answers
