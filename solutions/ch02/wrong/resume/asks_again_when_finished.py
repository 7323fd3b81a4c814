"""WRONG ANSWER to exercise 02.1 (chapter 02): the finished task is asked again.

The mistake: the checkpoint is never consulted; every resume offers the
derived key to the service and rewrites the checkpoint with the answer. It
never charges twice (the key is the right one), but on a finished task the
service now answers ``already_committed`` and that overwrites the recorded
``committed``: the history no longer says which process made the charge.
Caught by ``test_a_finished_task_is_left_alone``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from crashcourse.services import payments
from crashcourse.workers import pay_invoice, paying


def resume_payment(
    service: str | Path, state: sqlite3.Connection, task: str, order: str,
    amount_cents: int, currency: str,
) -> str:
    """Reconcile every time: the service is the authority, so always ask it."""
    key = pay_invoice.payment_key(task, order, amount_cents, currency)
    outcome = payments.issue_payment(service, key, order, amount_cents, currency)
    paying.save_checkpoint(state, task, key, outcome)
    return outcome
