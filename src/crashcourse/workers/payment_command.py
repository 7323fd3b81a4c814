"""The command line both payment workers share (chapters 00-04).

``pay_invoice`` and ``charge`` take the same options (``OPTIONS``; each adds
its own) and run the same way (``run``): check everything, open the worker's
own file, do the worker's own part (``pay_invoice.pay_task``: read the
checkpoint, then pay under the derived key; ``charge``: pay under the given
key), print one JSON line, exit by ``paying.EXITS``.

Everything is checked BEFORE the worker's own file is opened, because opening
it creates it: the text options, the amount and currency as the payment
service will check them, the busy timeout, the place of ``--state``, and that
the payment service (and a ``--notify`` mail provider) is an installed store
(``store.opened(path, require=...)``). Bad input gets one line on stderr and
exit status 2 (``options.BAD_INPUT``), and no file is created (issue 14). So
does a ``--state`` that is there but is not the worker's own store (0 bytes,
another program's database, damaged: ``store.connect``'s ``own=``, issue 35).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable

from crashcourse.effects import check_key
from crashcourse.services import payments
from crashcourse.store import StoreMissing, opened
from crashcourse.validate import (
    check_amount,
    check_count,
    check_currency,
    check_place,
    check_text,
)
from crashcourse.workers import paying
from crashcourse.workers.options import (
    Option,
    check_installed,
    refuse,
    whole_number,
)

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:  # only for hints
    from types import SimpleNamespace

MAX_BUSY_TIMEOUT_MS = 600_000  # ten minutes; longer is a typo, not patience

OPTIONS = (
    Option("--payments", "the payment service's SQLite file (installed)"),
    Option("--state", "the worker's own SQLite file (its checkpoint)"),
    Option("--task", "the workflow's task id"),
    Option("--order", "the supplier order to pay"),
    Option("--amount", "integer cents, 1 to 10**12", type=whole_number),
    Option("--currency", "three upper-case letters, e.g. USD"),
    Option("--busy-timeout-ms",
           "how long to wait for a locked payment service (then exit 5)",
           type=whole_number, default=payments.DEFAULT_BUSY_TIMEOUT_MS),
)

EPILOG = ("exit status: 0 paid (or found paid); 2 bad input, a payment "
          "service that is not installed or a --state that is not the worker's "
          "own store (one line on stderr, nothing written); "
          "3 refused (approval or budget); 4 the key is bound to another action; "
          "5 the payment service stayed locked (nothing charged); 6 held: "
          "another process kept the lock of the worker's own file (or the "
          "--notify mail provider's) past the busy timeout, the waiting "
          "transaction wrote nothing; 74 the machine refused a file "
          "mid-run (a full disk, a read-only mount): one line")


def check(args: SimpleNamespace) -> None:
    """Refuse bad input, or a service that is not installed, before anything is
    written: ValueError, TypeError or ``StoreMissing`` (chapter 00)."""
    check_text("--task", args.task)
    check_text("--order", args.order)
    check_amount(args.amount)
    check_currency(args.currency)
    if hasattr(args, "key"):  # charge's own
        check_key(args.key)
    check_count("--busy-timeout-ms", args.busy_timeout_ms, MAX_BUSY_TIMEOUT_MS)
    check_place("--state", args.state)
    check_text("--payments", args.payments)
    if os.path.realpath(args.state) == os.path.realpath(args.payments):
        raise ValueError("--state is the worker's own file, not the service's")
    check_installed((args.payments, payments.TABLES))
    if getattr(args, "notify", None) is not None:  # pay_invoice --notify (ch. 09)
        from crashcourse.services import mail  # only --notify runs need it

        check_text("--notify", args.notify)
        check_installed((args.notify, mail.TABLES))


def pay_under(state: sqlite3.Connection, args: SimpleNamespace, key: str) -> dict:
    """Pay ``args``'s invoice under ``key``, then checkpoint in ``state``
    (``paying.pay_then_checkpoint``); the worker's report (chapter 00)."""
    return paying.pay_then_checkpoint(
        state, args.payments, args.task, key, args.order, args.amount,
        args.currency, busy_timeout_ms=args.busy_timeout_ms)


def run(args: SimpleNamespace,
        work: Callable[[sqlite3.Connection, SimpleNamespace], dict]) -> int:
    """A payment worker's whole run: check, open its own file, ``work(state,
    args)`` (its report), print that report as one JSON line; the exit status
    (chapter 00)."""
    try:
        check(args)
    except (TypeError, ValueError, StoreMissing) as bad:
        return refuse(bad)
    with opened(args.state, own=paying.TABLES) as state:
        paying.install(state)
        report = work(state, args)
        notify = getattr(args, "notify", None)  # pay_invoice --notify (chapter 09)
        if notify and report["outcome"] in paying.PAID:
            report["notification"] = paying.notify_owner(
                state, notify, args.task, args.order, args.amount,
                args.currency)["notification"]
    print(json.dumps({"task": args.task, **report}, sort_keys=True))
    return paying.EXITS[report["outcome"]]
