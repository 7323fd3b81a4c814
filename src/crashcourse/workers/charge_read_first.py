"""Chapter 04's MUTANT of ``charge``: the allowance is read before the lock.

    python -m crashcourse.workers.charge_read_first [charge's options]

Same command line, sequence, report and exit statuses as
``crashcourse.workers.charge``, with one change, the one chapter 04 warns
against: ``issue_payment_read_first`` counts the budget in a transaction of
its own and only then takes the payment's ``BEGIN IMMEDIATE``. Between the
two (boundary ``budget_read``) another racer can spend the last unit, and
both pay. It is the negative control of the chapter 04 race
(``checkpoints/ch04_budget_race.py``); nothing else runs it.
"""

from __future__ import annotations

import json
import sys

from crashcourse.boundary import boundary
from crashcourse.services import payments
from crashcourse.services.payments import budget
from crashcourse.store import StoreMissing, immediate, opened
from crashcourse.workers import charge, paying, payment_command
from crashcourse.workers.options import one_line_errors, refuse

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:
    from pathlib import Path


def issue_payment_read_first(path: str | Path, key: str, order_id: str,
                             amount_cents: int, currency: str, *,
                             busy_timeout_ms: int = payments.DEFAULT_BUSY_TIMEOUT_MS
                             ) -> str:
    """MUTANT: ``payments.issue_payment`` with its step 3, the budget, read
    BEFORE the write lock is taken. Everything else is in its order, a lock
    kept past ``busy_timeout_ms`` included: ``PaymentServiceBusy``, nothing
    charged."""
    payments.check_action(key, order_id, amount_cents, currency)
    action = {"order_id": order_id, "amount_cents": amount_cents, "currency": currency}
    with payments.busy_means_not_charged("nothing was read"), \
            opened(path, require=payments.TABLES, record=True,
                   busy_timeout_ms=busy_timeout_ms) as conn:  # no lock
        reason = budget.shortfall(conn, amount_cents, currency)
    boundary("budget_read")  # the gap: another racer can pay here
    with payments.busy_means_not_charged("nothing was charged"), \
            opened(path, require=payments.TABLES, record=True,
                   busy_timeout_ms=busy_timeout_ms) as conn, immediate(conn):
        if replayed := payments.find_payment(conn, key):
            if replayed != action:
                raise payments.PaymentConflict(key, replayed, action)
            return "already_committed"
        terms = payments.require_approval(conn, action)
        if reason:  # decided on a count that may be out of date by now
            raise payments.BudgetExhausted(reason, order_id)
        payments.record_payment(conn, key, action, terms)
    return "committed"


@one_line_errors(held=paying.EXITS["held"])
def main(argv: list[str] | None = None) -> int:
    """``charge``, paying through ``issue_payment_read_first`` (chapter 04)."""
    args = charge.parse(argv)
    try:
        payment_command.check(args)
    except (TypeError, ValueError, StoreMissing) as bad:
        return refuse(bad)
    with opened(args.state, own=paying.TABLES) as state:
        paying.install(state)
        boundary("before_payment")
        try:
            outcome = issue_payment_read_first(args.payments, args.key, args.order,
                                               args.amount, args.currency,
                                               busy_timeout_ms=args.busy_timeout_ms)
        except payments.ApprovalRefused as refused:  # BudgetExhausted included
            report = {"outcome": "refused", "reason": refused.reason}
        except payments.PaymentConflict:  # as charge answers it: exit 4
            report = {"outcome": "conflict"}
        except payments.PaymentServiceBusy as busy:  # as charge: exit 5
            report = {"outcome": "busy", "reason": str(busy)}
        else:
            boundary("after_payment")
            paying.save_checkpoint(state, args.task, args.key, outcome)
            report = {"outcome": outcome}
    print(json.dumps({"task": args.task, **report}, sort_keys=True))
    return paying.EXITS[report["outcome"]]


if __name__ == "__main__":
    sys.exit(main())
