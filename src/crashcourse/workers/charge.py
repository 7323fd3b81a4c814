"""The worker of chapters 03-04: one charge under an explicit key, then checkpoint.

    python -m crashcourse.workers.charge --payments PATH --state PATH \\
        --task T --key K --order O --amount 4000 --currency USD

Unlike ``pay_invoice`` the key is given, not derived: chapter 03 replays a key
with a changed amount, and chapter 04 races two keys for the last unit. The
sequence is the same (``paying.pay_then_checkpoint``), with the registered
boundaries ``before_payment``, ``payment_inserted`` (inside the payment
transaction, after the INSERT and before the COMMIT), ``after_payment`` and
``after_checkpoint``.

It prints one JSON line saying what it did and exits by ``paying.EXITS``: 0
(committed or replayed), 2 (bad input, a blank ``--key`` included, or a
``--payments`` file that is not an installed service: one line on stderr,
nothing created), 3 (refused, with the reason), 4 (key conflict), 5
(service busy: nothing charged), 6 (held: another process kept the lock of
``--state`` past the busy timeout, a holder paused mid-write, issue 35; the
waiting transaction wrote nothing) or 74 (the machine refused a file mid-run:
one line).
Graders read the payment service's file, never this line or the exit status.
"""

from __future__ import annotations

import sys

from crashcourse.workers import options, paying, payment_command

OPTIONS = (*payment_command.OPTIONS,
           options.Option("--key", "the operation key to pay under"))


def parse(argv: list[str] | None = None):
    """The worker's options; ``--help`` lists them (chapter 03)."""
    return options.parse(__doc__.split("\n\n")[0], OPTIONS, argv,
                         payment_command.EPILOG)


@options.one_line_errors(held=paying.EXITS["held"])
def main(argv: list[str] | None = None) -> int:
    return payment_command.run(parse(argv), pay)


def pay(state, args) -> dict:
    """Pay under the given key, whatever the checkpoint says: chapter 03 asks
    again on purpose, under the same key and under a fresh one (chapter 03)."""
    return payment_command.pay_under(state, args, args.key)


if __name__ == "__main__":
    sys.exit(main())
