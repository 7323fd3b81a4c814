"""No checkpoint, so pay under a new key. Caught by
``test_killed_after_payment_reconciles_without_a_second_charge``."""

import uuid


def resume_payment(
    service: str | Path, state: sqlite3.Connection, task: str, order: str,
    amount_cents: int, currency: str,
) -> str:
    """Finish ``task``: no checkpoint means no payment, so pay now."""
    if paying.load_checkpoint(state, task) is not None:
        return "already_committed"
    base = pay_invoice.payment_key(task, order, amount_cents, currency)
    key = f"{base}#retry-{uuid.uuid4().hex[:8]}"  # a fresh attempt, a fresh key
    outcome = payments.issue_payment(service, key, order, amount_cents, currency)
    paying.save_checkpoint(state, task, key, outcome)
    return outcome
