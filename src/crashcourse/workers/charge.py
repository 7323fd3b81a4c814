"""The worker of chapters 03-04: one charge under an explicit key, then checkpoint.

    python -m crashcourse.workers.charge --db PATH --task T --key K --order O \\
        --amount 4000 --currency USD

Unlike ``pay_invoice`` the key is given, not derived: chapter 03 replays a key
with a changed amount, and chapter 04 races two keys for the last unit.

Registered boundaries, in order: ``before_payment``, ``payment_inserted``
(inside the payment transaction, after the INSERT and before the COMMIT),
``after_payment``, ``after_checkpoint``.

It prints one JSON line saying what it did and exits 0 (committed or replayed),
3 (refused, with the reason), 4 (key conflict) or 5 (service busy). Graders
read the payment database, never this line or the exit status.
"""

from __future__ import annotations

import argparse
import json
import sys

from crashcourse import payments
from crashcourse.boundary import boundary

EXITS = {"committed": 0, "already_committed": 0, "refused": 3, "conflict": 4,
         "busy": 5}


def charge(args: argparse.Namespace) -> dict:
    """Ask the service for this payment; report what it answered."""
    boundary("before_payment")
    try:
        outcome = payments.issue_payment(
            args.db, args.key, args.order, args.amount, args.currency
        )
    except payments.ApprovalRefused as refused:
        return {"outcome": "refused", "reason": refused.reason}
    except payments.PaymentConflict:
        return {"outcome": "conflict"}
    except payments.PaymentServiceBusy:
        return {"outcome": "busy"}
    boundary("after_payment")
    payments.save_checkpoint(args.db, args.task, args.key, outcome)
    boundary("after_checkpoint")
    return {"outcome": outcome}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="payment service SQLite file")
    parser.add_argument("--task", required=True, help="the workflow's task id")
    parser.add_argument("--key", required=True, help="the idempotency key")
    parser.add_argument("--order", required=True, help="the supplier order to pay")
    parser.add_argument("--amount", type=int, required=True, help="integer cents")
    parser.add_argument("--currency", required=True, help="e.g. USD")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    report = {"task": args.task, **charge(args)}
    print(json.dumps(report, sort_keys=True))
    return EXITS[report["outcome"]]


if __name__ == "__main__":
    sys.exit(main())
