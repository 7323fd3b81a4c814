"""Solution 02.1: the replacement's resume, which reuses the operation key
(chapter 02)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from crashcourse.services import payments
from crashcourse.workers import pay_invoice, paying


def resume_payment(
    service: str | Path, state: sqlite3.Connection, task: str, order: str,
    amount_cents: int, currency: str,
) -> str:
    """Finish ``task`` without paying twice; return the payment's outcome."""
    if paying.load_checkpoint(state, task) is not None:
        # Finished: the checkpoint is written after the charge, so it proves
        # it. Asking again could charge again once the service forgot the key.
        return "already_committed"
    # The key is derived, not invented: the dead worker computed the same one,
    # so the service can tell us whether that very charge already happened.
    key = pay_invoice.payment_key(task, order, amount_cents, currency)
    outcome = payments.issue_payment(service, key, order, amount_cents, currency)
    paying.save_checkpoint(state, task, key, outcome)  # the worker's own file
    return outcome
