"""Solution 02.1: Kata 11's resume, which reuses the operation's key (chapter 02)."""

from __future__ import annotations

from pathlib import Path

from crashcourse import payments
from crashcourse.workers import pay_invoice


def resume_payment(
    db: str | Path, task: str, order: str, amount_cents: int, currency: str
) -> str:
    """Finish ``task`` without paying twice; return the payment's outcome."""
    recorded = payments.load_checkpoint(db, task)
    if recorded is not None:
        return recorded["outcome"]  # finished: nothing to ask, nothing to write
    # The key is derived, not invented: the dead worker computed the same one,
    # so the service can tell us whether that very charge already happened.
    key = pay_invoice.payment_key(task, order, amount_cents, currency)
    outcome = payments.issue_payment(db, key, order, amount_cents, currency)
    payments.save_checkpoint(db, task, key, outcome)
    return outcome
