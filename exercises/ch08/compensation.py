"""Exercise 08.3: the compensation plan of a cancelled workflow (chapter 08).

The restock workflow was cancelled part-way. Before anyone calls a service
to undo anything, write down what each step needs, from the worker's own
rows: ``workflow_steps.progress(conn, workflow_id)`` gives each step, in
order, with its operation key, its status (not_started, in_doubt, done,
not_done) and, for a step in doubt, its ``attempts`` since its last outcome
(each with its ``expires``, the lease on the store's clock, and its
``admitted_at``, None if ``admit`` never let its call out). The plan is what
the person reads and what the compensation rows will say once it is carried
out; writing it changes nothing.
"""

from __future__ import annotations

import sqlite3

from crashcourse import store, workflow
from crashcourse.workflow import steps as workflow_steps
from crashcourse.effects import operation_key  # noqa: F401  (the release's key)
from crashcourse.workflow.steps import (  # noqa: F401  (the plan's statuses)
    CANNOT_UNDO,
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


def compensation_plan(conn: sqlite3.Connection, workflow_id: str,
                      probed: dict | None = None, now: float | None = None
                      ) -> list[dict]:
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
    - A step in doubt (attempted, no outcome since) is settled by its rows
      where they can say, and by its service where they cannot:
      * no attempt of it was ever admitted: ``NOTHING``. The cancel moved
        the version, and ``admit`` never lets out the call of an attempt
        whose version is not the workflow's;
      * an admitted call at a service in ``FENCED``: ``probed[step]``, what
        asking its service by the operation key answered (a bool), lease
        or no lease: the probe is made after the cancel's fence, from whose
        commit on no earlier call can land there;
      * an admitted call elsewhere whose lease is live at ``now`` (None:
        the store's clock, ``store.now``): ``WAIT``, whatever a probe says;
      * an admitted call elsewhere whose lease is over: ``probed[step]``.
        True: its undo. False is only "not yet": the holder may be paused
        after its admission, past its lease, and still charge or send, so
        ``WAIT``; a later probe settles it.
      A step that needs a probe and has none in ``probed``, an answer that
      is not a bool, or an answer for a step NOT in doubt: ValueError
      (``probed`` that is not a dict: TypeError). Answers for the other
      steps in doubt are allowed and change nothing.
    - ``note`` is a sentence for the person who reads the plan.

    Only a cancelled (or failed) workflow has a compensation plan: any
    other state is a ValueError, an unknown workflow a KeyError. The plan
    writes nothing and calls no service.
    """
    raise NotImplementedError("exercise 08.3: plan the undo, step by step")
