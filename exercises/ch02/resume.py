"""Exercise 02.1: the replacement's resume, which reuses the operation key
(chapter 02).

A replacement process runs ``resume_payment`` after the worker
``crashcourse.workers.pay_invoice`` died somewhere in its task. The worker
touched two files:

* the payment service's file, called by its path (``service``): it paid
  through ``payments.issue_payment`` under the operation key
  ``payment_key(task, order, amount_cents, currency)``;
* its own file, through an open connection (``state``): then, in a separate
  transaction, it wrote its checkpoint with
  ``paying.save_checkpoint(state, task, key, outcome)``.

The replacement is handed the same two: the service's path and an open
connection to the worker's own file, whose ``checkpoints`` table the worker
installed when it started.

Write it from those building blocks. The worker's own resume, which chapter
00 prints (``pay_invoice.pay_task``, and its pay step
``paying.pay_then_checkpoint``), is this exercise's answer; the grader
refuses a call to it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from crashcourse.services import payments  # noqa: F401  (the payment service)
from crashcourse.workers import paying  # noqa: F401  (the checkpoint)
from crashcourse.workers.pay_invoice import payment_key  # noqa: F401  (the key)


def resume_payment(
    service: str | Path, state: sqlite3.Connection, task: str, order: str,
    amount_cents: int, currency: str,
) -> str:
    """Finish ``task`` without paying twice; return the payment's outcome.

    ``service`` is the payment service's path; ``state`` is an open connection
    to the worker's own file, where its checkpoint lives.

    * The task's checkpoint exists in ``state``: the task is finished (the
      checkpoint is written only after the service answered, so it proves the
      charge). Return ``"already_committed"``; ask the service nothing (it may
      have forgotten the key by now) and rewrite nothing.
    * No checkpoint: reconcile first. Offer the service the SAME operation key
      the dead worker used (derived from the task and the action, never
      fresh), so a charge that already happened comes back as
      ``"already_committed"`` and one that did not happens now
      (``"committed"``). Then write the checkpoint in ``state`` with that key
      and outcome, and return the outcome.
    * The service refuses a new payment (``payments.ApprovalRefused``): let
      the error propagate and write no checkpoint.

    The replacement may itself be killed, anywhere, and resumed again: every
    case above must still hold for the next run.
    """
    raise NotImplementedError("exercise 02.1: write resume_payment")
