"""Exercise 08.3: the compensation plan of a cancelled workflow (chapter 08).

The restock workflow was cancelled part-way. Before anyone calls a service
to undo anything, write down what each step needs, from the worker's own
rows: ``workflow_steps.progress(conn, workflow_id)`` gives each step, in
order, with its operation key and its status (not_started, in_doubt, done,
not_done). The plan is what the person reads and what the compensation rows
will say once it is carried out; writing it changes nothing.
"""

from __future__ import annotations

import sqlite3

from crashcourse import workflow, workflow_steps  # noqa: F401  (read the rows)
from crashcourse.effects import operation_key  # noqa: F401  (the release's key)
from crashcourse.workflow_steps import (  # noqa: F401  (the plan's statuses)
    CANNOT_UNDO,
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


def compensation_plan(conn: sqlite3.Connection, workflow_id: str,
                      probed: dict | None = None) -> list[dict]:
    """One entry per step of the workflow, in order::

        {"step", "operation_key", "action", "status",
         "compensation_key", "note"}

    - A step whose effect exists gets its ``UNDO``. The reservation is
      released under its OWN operation key, derived with ``operation_key``
      from the workflow id, the step, the action ``"release"`` and the order
      it releases: ``{"order": <the reserve step's operation key>}``. The
      other steps have no call to make: ``compensation_key`` is None.
    - A step with no effect (never attempted, or the service refused it)
      gets ``NOTHING``.
    - A step in doubt (attempted, no outcome) cannot be settled from rows:
      ``probed[step]`` is what asking its service by the operation key
      answered (a bool). A step in doubt missing from ``probed``, an answer
      that is not a bool, or an answer for a step NOT in doubt: ValueError
      (``probed`` that is not a dict: TypeError).
    - ``note`` is a sentence for the person who reads the plan.

    Only a cancelled (or failed) workflow has a compensation plan: any
    other state is a ValueError, an unknown workflow a KeyError. The plan
    writes nothing and calls no service.
    """
    raise NotImplementedError("exercise 08.3: plan the undo, step by step")
