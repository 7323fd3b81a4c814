"""Exercise 08.2: predict the race after a kill (chapter 08).

The restock workflow (``crashcourse.workers.workflow_worker``) runs three
steps, each one remote call: ``reserve`` (the supplier), ``charge`` (the
payment service, which wants a person's approval) and ``mail``. A worker
runs it from ``pending`` and is SIGKILLed at ``boundary``. Then two recovery
workers start: both read the same state and version (they are held at
``after_read``) and are released together.

What the worker writes, one version per transition, each a history row
whose ``note`` says what it was:

- ``"run"``: pending (or waiting_for_approval) -> running;
- ``"attempt <step>"``: running -> running, BEFORE the step's remote call;
- ``"outcome <step>"``: after the call, running -> running, or running ->
  waiting_for_approval when the payment service refused for want of an
  approval (no payment is made then);
- ``"every step done"``: running -> applied.

A step with an attempt and no outcome is in doubt: recovery asks the service
by the step's operation key first, records the outcome if the effect is
there, and attempts (and calls) again only if it is not.
"""

from __future__ import annotations

from crashcourse.workers.workflow_worker import BOUNDARIES, EXIT  # noqa: F401
from crashcourse.workflow import (  # noqa: F401  (the states and reasons)
    APPLIED,
    ILLEGAL_MOVE,
    PENDING,
    RUNNING,
    STALE_VERSION,
    WAITING,
)

STEPS = ("reserve", "charge", "mail")


def predict(boundary: str, keys: dict, *, approved: bool = True) -> dict:
    """What the two recovery workers do after a SIGKILL at ``boundary``.

    ``boundary`` is one of ``BOUNDARIES`` (``after_read`` or
    ``before_remote:<step>`` / ``after_remote:<step>``); ``keys`` maps each
    of the three steps to its operation key; ``approved`` says whether the
    charge was approved before anything ran. Return::

        {"winner": {"exit_code": int, "transitions": [
             {"version": int, "from_state": str, "to_state": str, "note": str},
             ...]},  # every history row the winner writes, oldest first
         "loser": {"exit_code": int, "refused": str, "transitions": [...]},
         "final_state": str,
         "service_ops": {operation_key: int}}  # every key of ``keys``

    The winner is the recovery worker that makes the first transition after
    the kill. ``service_ops`` counts what each service RECORDED under the
    key, once both recovery workers have exited: the supplier's POSTs in its
    request log (a lookup is a GET and does not count), the payment
    service's payments, the mail provider's messages; 0 for a key no service
    recorded. A boundary the killed worker cannot reach, or any other
    boundary or set of keys: ValueError.
    """
    raise NotImplementedError("exercise 08.2: predict before you run it")
