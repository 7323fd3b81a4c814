"""The worker of chapters 00-02: pay one supplier invoice, then checkpoint.

    python -m crashcourse.workers.pay_invoice --db PATH --task T --order O \\
        --amount 4000 --currency USD [--retry new-key]

Registered boundaries, in order: ``before_payment``, ``after_payment``,
``after_checkpoint``. The parent may kill the worker at any of them.

Exit status: 0 paid (or found paid), 3 refused (approval or budget), 5 the
payment database stayed locked past ``--busy-timeout-ms``: nothing was charged
and a rerun with the same key is safe.

``--retry reuse-key`` (the reference) derives the operation key from the task
and the action, so a resumed process asks the payment service about the SAME
key and learns the charge already happened. ``--retry new-key`` is the mutant
of chapter 02: it reads a missing checkpoint as "nothing happened" and pays
under a fresh key. It exits 0 all the same; only the durable rows show it.

The worker prints one JSON line saying what it did. Graders never read it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from crashcourse import payments
from crashcourse.boundary import boundary
from crashcourse.effects import operation_key

REFUSED_EXIT = 3  # a refused NEW payment is an outcome, not a crash
BUSY_EXIT = 5  # the service stayed locked: nothing charged, retry with the same key


def payment_key(task: str, order: str, amount: int, currency: str) -> str:
    """The reference key: the same task and action always give the same key."""
    args = {"order": order, "amount_cents": amount, "currency": currency}
    return operation_key(task, 1, "pay_invoice", args)


def choose_key(args: argparse.Namespace) -> str:
    key = payment_key(args.task, args.order, args.amount, args.currency)
    if args.retry == "reuse-key":
        return key
    done = payments.load_checkpoint(args.db, args.task)
    # The mutant's mistake: no checkpoint, so it assumes no payment and mints a
    # new key. With a checkpoint it reuses the key it recorded there.
    return done["key"] if done else f"{key}#attempt-{os.getpid()}"


def run(args: argparse.Namespace) -> dict:
    try:
        return pay(args)
    except payments.PaymentServiceBusy as busy:
        return {"task": args.task, "outcome": "busy", "reason": str(busy)}


def pay(args: argparse.Namespace) -> dict:
    payments.initialize(args.db, busy_timeout_ms=args.busy_timeout_ms)
    key = choose_key(args)
    boundary("before_payment")
    try:
        outcome = payments.issue_payment(
            args.db, key, args.order, args.amount, args.currency,
            busy_timeout_ms=args.busy_timeout_ms,
        )
    except payments.ApprovalRefused as refused:
        return {"task": args.task, "outcome": "refused", "reason": refused.reason}
    boundary("after_payment")
    payments.save_checkpoint(args.db, args.task, key, outcome)
    boundary("after_checkpoint")
    return {"task": args.task, "outcome": outcome}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="payment service SQLite file")
    parser.add_argument("--task", required=True, help="the workflow's task id")
    parser.add_argument("--order", required=True, help="the supplier order to pay")
    parser.add_argument("--amount", type=int, required=True, help="integer cents")
    parser.add_argument("--currency", required=True, help="e.g. USD")
    parser.add_argument(
        "--retry", choices=("reuse-key", "new-key"), default="reuse-key",
        help="reuse-key: the reference; new-key: the chapter 02 mutant",
    )
    parser.add_argument(
        "--busy-timeout-ms", type=int, default=payments.DEFAULT_BUSY_TIMEOUT_MS,
        help="how long to wait for a locked payment database (then exit 5)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    report = run(parse(argv))
    print(json.dumps(report, sort_keys=True))
    exits = {"refused": REFUSED_EXIT, "busy": BUSY_EXIT}
    return exits.get(report["outcome"], 0)


if __name__ == "__main__":
    sys.exit(main())
