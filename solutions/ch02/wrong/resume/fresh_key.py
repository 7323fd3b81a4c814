"""WRONG ANSWER to exercise 02.1 (chapter 02): no checkpoint, so pay under a new key.

The mistake is the chapter's mutant: a missing checkpoint is read as "nothing
was paid", and the payment is made under a key minted now. The service has
never seen that key, so it charges again. Killed after the payment, the
supplier is paid twice (resuming a second time adds nothing: the first
resume wrote a checkpoint, which the second one finds); killed before the
payment, it pays once but under a key no other process can recompute.
Caught by ``test_killed_after_payment_reconciles_without_a_second_charge``
and more.
"""


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
