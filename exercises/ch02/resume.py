"""Exercise 02.1: Kata 11's resume, which reuses the operation's key (chapter 02).

A replacement process runs ``resume_payment`` after the worker
``crashcourse.workers.pay_invoice`` died somewhere in its task. The worker
paid through ``crashcourse.payments.issue_payment`` under the key
``pay_invoice.payment_key(task, order, amount_cents, currency)`` and then, in a
separate transaction, wrote ``payments.save_checkpoint(db, task, key, outcome)``.
"""

from __future__ import annotations

from pathlib import Path

from crashcourse import payments  # noqa: F401  (the service and the checkpoint)
from crashcourse.workers import pay_invoice  # noqa: F401  (payment_key)


def resume_payment(
    db: str | Path, task: str, order: str, amount_cents: int, currency: str
) -> str:
    """Finish ``task`` without paying twice; return the payment's outcome.

    * The task's checkpoint exists: the task is finished. Return the outcome
      it recorded, unchanged; ask the service nothing, rewrite nothing.
    * No checkpoint: reconcile first. Offer the service the SAME key the dead
      worker used (derived from the task and the action, never fresh), so a
      charge that already happened comes back as ``"already_committed"`` and
      one that did not happens now (``"committed"``). Then write the
      checkpoint with that key and outcome, and return the outcome.
    * The service refuses a new payment (``payments.ApprovalRefused``): let
      the error propagate and write no checkpoint.
    """
    raise NotImplementedError("exercise 02.1: write resume_payment")
