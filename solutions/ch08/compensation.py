"""Exercise 08.3, answered: the compensation plan of a cancelled workflow
(chapter 08).

The plan is read from rows only. What a step needs depends on one question,
"does its effect exist?", which the rows answer for every step but one in
doubt; for that one the caller brings the service's answer (``probed``).
An effect that exists gets its step's undo; the release has its own
operation key, derived once from the workflow, the step, the action and the
order, so whoever carries the plan out, as often as they do, asks the
supplier for the same one release.
"""

from __future__ import annotations

import sqlite3

from crashcourse import workflow, workflow_steps
from crashcourse.effects import operation_key
from crashcourse.workflow_steps import (
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
NOTES = {
    "released": "release the reservation at the supplier under its own key",
    "refund_owed": "the payment stays made: a person decides about a refund",
    "cannot_unsend": "the confirmation was sent and cannot be unsent",
    "none": "no effect exists: nothing to undo",
}


def compensation_plan(conn: sqlite3.Connection, workflow_id: str,
                      probed: dict | None = None) -> list[dict]:
    """What each step of a cancelled (or failed) workflow needs, from its
    rows and the probes of steps in doubt; writes nothing (chapter 08)."""
    state = workflow.read(conn, workflow_id)["state"]  # KeyError if unknown
    if state not in (workflow.CANCELLED, workflow.FAILED):
        raise ValueError(f"workflow {workflow_id!r} is {state}: no compensation")
    steps = workflow_steps.progress(conn, workflow_id)
    answers = check_probed(probed, {s["step"] for s in steps
                                    if s["status"] == IN_DOUBT})
    plan = []
    for step in steps:
        name, key = step["step"], step["operation_key"]
        exists = step["status"] == DONE or answers.get(name, False)
        action, status = UNDO[name] if exists else NOTHING
        undo_key = None
        if action == "released":
            undo_key = operation_key(workflow_id, name, "release", {"order": key})
        plan.append({"step": name, "operation_key": key, "action": action,
                     "status": status, "compensation_key": undo_key,
                     "note": NOTES[action]})
    return plan


def check_probed(probed: dict | None, in_doubt: set[str]) -> dict:
    """A bool answer for every step in doubt, and for no other (chapter 08)."""
    answers = {} if probed is None else probed
    if not isinstance(answers, dict):
        raise TypeError("probed must be a dict of step -> bool")
    if set(answers) != in_doubt:
        raise ValueError(f"probe answers are needed for exactly the steps in"
                         f" doubt {sorted(in_doubt)}, got {sorted(answers)}")
    if not all(isinstance(answer, bool) for answer in answers.values()):
        raise ValueError("each probe answer must be a bool")
    return answers
