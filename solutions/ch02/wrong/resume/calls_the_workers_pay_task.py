"""WRONG ANSWER to exercise 02.1 (chapter 02): the worker's own resume, called.

Gaming, not a mistake of reasoning: chapter 00 prints
``pay_invoice.pay_task``, which is this exercise's answer (checkpoint first,
then pay under the derived key and checkpoint), so four lines hand it in.
Every test would pass on its behaviour; the exercise asks the reader to write
it. The grader replaces the worker's own resume and pay steps with refusals
before the answer is loaded. Caught by
``test_killed_after_payment_reconciles_without_a_second_charge`` (and every
other test).
"""

from types import SimpleNamespace


def resume_payment(
    service: str | Path, state: sqlite3.Connection, task: str, order: str,
    amount_cents: int, currency: str,
) -> str:
    """Finish ``task`` without paying twice; return the payment's outcome."""
    args = SimpleNamespace(payments=str(service), task=task, order=order,
                           amount=amount_cents, currency=currency,
                           retry="reuse-key", busy_timeout_ms=5000)
    report = pay_invoice.pay_task(state, args)
    if report["outcome"] == "refused":
        raise payments.ApprovalRefused(report["reason"], order)
    return report["outcome"]
