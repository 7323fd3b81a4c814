"""WRONG ANSWER to exercise 02.1 (chapter 02): the finished task is asked again.

The mistake: the checkpoint is never consulted; every resume offers the
derived key to the service and rewrites the checkpoint with the answer. While
the service remembers the key it never charges twice, but it rewrites the
finished task's record (``committed`` becomes ``already_committed``: the
history no longer says which process made the charge), and once the service
has forgotten the key, as real providers do after their retention window,
the same key is a new request and the finished task is paid again. Caught by
``test_a_finished_task_is_left_alone`` and
``test_a_finished_task_is_not_paid_again_after_the_service_forgot_its_key``.
"""


def resume_payment(
    service: str | Path, state: sqlite3.Connection, task: str, order: str,
    amount_cents: int, currency: str,
) -> str:
    """Reconcile every time: the service is the authority, so always ask it."""
    key = pay_invoice.payment_key(task, order, amount_cents, currency)
    outcome = payments.issue_payment(service, key, order, amount_cents, currency)
    paying.save_checkpoint(state, task, key, outcome)
    return outcome
