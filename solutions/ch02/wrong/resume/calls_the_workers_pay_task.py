"""The worker's own resume, called. Caught by
``test_killed_after_payment_reconciles_without_a_second_charge``."""

from types import SimpleNamespace


def resume_payment(
    service: str | Path, state: sqlite3.Connection, task: str, order: str,
    amount_cents: int, currency: str,
) -> str:
    args = SimpleNamespace(payments=str(service), task=task, order=order,
                           amount=amount_cents, currency=currency,
                           retry="reuse-key", busy_timeout_ms=5000)
    report = pay_invoice.pay_task(state, args)
    if report["outcome"] == "refused":
        raise payments.ApprovalRefused(report["reason"], order)
    return report["outcome"]
