"""The finished task is asked again. Caught by ``test_a_finished_task_is_left_alone``
and ``test_a_finished_task_is_not_paid_again_after_the_service_forgot_its_key``."""


def resume_payment(
    service: str | Path, state: sqlite3.Connection, task: str, order: str,
    amount_cents: int, currency: str,
) -> str:
    """Reconcile every time: the service is the authority, so always ask it."""
    key = pay_invoice.payment_key(task, order, amount_cents, currency)
    outcome = payments.issue_payment(service, key, order, amount_cents, currency)
    paying.save_checkpoint(state, task, key, outcome)
    return outcome
