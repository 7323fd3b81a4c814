"""The worker of chapters 00-02: pay one supplier invoice, then checkpoint.

    python -m crashcourse.workers.pay_invoice --payments PATH --state PATH \\
        --task T --order O --amount 4000 --currency USD [--retry new-key] \\
        [--notify MAIL_PATH]

``--payments`` is the payment service's file (the outside world);
``--state`` is the worker's own file, where it keeps its checkpoint.
Registered boundaries, in order: ``before_payment``, ``after_payment``,
``after_checkpoint``. The parent may kill the worker at any of them.

Exit status (``paying.EXITS``): 0 paid (or found paid); 2 bad input (an
amount that is not 1 to 10**12 whole cents, a currency that is not three
upper-case letters, a blank task or order, a ``--state`` with no directory) or
a ``--payments`` (or ``--notify``) file that is not an installed service: one
line on stderr, no traceback, nothing created; 3 refused (approval or
budget); 4 the key is bound to another action; 5 the payment service stayed
locked past ``--busy-timeout-ms``: nothing was charged and a rerun with the
same key is safe; 6 held: another process kept the write lock of
``--state`` (or of the ``--notify`` mail provider's file) past the busy
timeout (a holder paused mid-write, issue 35): the transaction that waited
wrote nothing, a rerun with the same key is safe (one JSON line, ``held``); 74
the machine refused a file mid-run (a full disk, a read-only mount): one line
on stderr, and what committed before stays.

Both variants first read their own checkpoint (``pay_task``): the checkpoint
is written only after the service answered, so a checkpoint proves the charge
and the task is finished: nothing is asked again (the service may have
forgotten the key by then). A MISSING checkpoint proves nothing.
``--retry reuse-key`` (the reference) then pays under the operation key
derived from the task and the action, so a resumed process offers the SAME
key and the service answers ``already_committed`` if the charge happened.
``--retry new-key`` is the mutant of chapter 02: it reads the missing
checkpoint as "nothing happened" and pays under a fresh key. It exits 0 all
the same; only the durable rows show it.

``--notify MAIL_PATH`` (chapter 09): once paid, the worker also tells the
shop's owner through the mail provider at ``MAIL_PATH``, a second side effect
with its own key and state (``paying.notify_owner``), and two more
boundaries: ``after_notify_accepted``, ``after_notify_recorded``.

The worker prints one JSON line saying what it did. Graders never read it.
"""

from __future__ import annotations

import os
import sys

from crashcourse.effects import operation_key
from crashcourse.workers import options, paying, payment_command

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["OPTIONS", "payment_key", "command", "pay_task", "choose_key", "parse",
    "main"]

OPTIONS = (
    *payment_command.OPTIONS,
    options.Option("--retry",
                   "reuse-key: the reference; new-key: the chapter 02 mutant",
                   choices=("reuse-key", "new-key"), default="reuse-key"),
    options.Option("--notify", "once paid, notify the shop's owner through this mail "
                   "provider's file (chapter 09; default: no notification)",
                   metavar="MAIL_PATH", default=None),
)


def payment_key(task: str, order: str, amount: int, currency: str) -> str:
    """The reference key: the same task and action always give the same key.

    Introduced in chapter 00."""
    args = {"order": order, "amount_cents": amount, "currency": currency}
    return operation_key(task, 1, "pay_invoice", args)


def command(service, state, task: str = "restock-1", order: str = "PO-1001",
            amount: int = 4000, currency: str = "USD",
            retry: str = "reuse-key") -> list[str]:
    """The worker's command line for ``Harness.start`` (``sys.executable``'s
    arguments): pay ``order`` for ``task``; by default chapter 00's invoice,
    40 dollars of oat milk (chapters 00-02). The same run as ``python -m
    crashcourse.workers.pay_invoice`` with these options, started without
    ``-m``'s runpy (``options.launch``)."""
    return [*options.launch("crashcourse.workers.pay_invoice"),
            "--payments", str(service), "--state", str(state), "--task", task,
            "--order", order, "--amount", str(amount), "--currency", currency,
            "--retry", retry]


def pay_task(state, args) -> dict:
    """The worker's run once its own file is open: the report (chapter 02).

    Its checkpoint first: it is written after the service answered, so it
    proves the charge, and nothing is asked again. Without one, nothing is
    known: pay under ``choose_key``'s key and let the service say whether
    that charge already happened."""
    if paying.load_checkpoint(state, args.task) is not None:
        return {"outcome": "already_committed"}  # paid before this process
    return payment_command.pay_under(state, args, choose_key(args))


def choose_key(args) -> str:
    """The key to pay under: derived (reference) or fresh (mutant, chapter 02)."""
    key = payment_key(args.task, args.order, args.amount, args.currency)
    if args.retry == "reuse-key":
        return key
    # The mutant's mistake: no checkpoint, so "nothing was paid": a new key.
    return f"{key}#attempt-{os.getpid()}"


def parse(argv: list[str] | None = None):
    """The worker's options; ``--help`` lists them (chapter 00)."""
    return options.parse(__doc__.split("\n\n")[0], OPTIONS, argv,
                         payment_command.EPILOG)


@options.one_line_errors(held=paying.EXITS["held"])
def main(argv: list[str] | None = None) -> int:
    return payment_command.run(parse(argv), pay_task)


if __name__ == "__main__":
    sys.exit(main())
