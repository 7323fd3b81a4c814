"""The wedged worker of chapter 09: it reads the pause flag between steps, and
hangs inside one.

    python -m crashcourse.workers.wedged_worker --drive PATH --mail PATH \\
        --credential TOKEN [--runtime PATH] [--limit N] [--pace SECONDS]

It stands for an agent that behaves at its step boundaries and is stuck in
the middle of a step, as on a page that never loads. Its plan renames each
of the drive's files in turn, one step each, and before every step it asks
the pause flag in ``--runtime`` (the runtime's own file, as the journal
worker does); given no ``--runtime`` it has no flag to read. Its first step
waits for a confirmation that never comes, and retries meanwhile: each
retry renames the step's file again, to a name of its own so that every
request changes the drive, and every fourth retry mails the owner "still
working". The flag is not read inside a step. After ``--limit`` retries the
step gives up, and the worker reaches its next boundary, where it reads the
flag: set, it stops there (exit 0); not set, it moves on to the next file
(and its step hangs the same way).

The first refusal from a service (a revoked or expired credential) ends it
with exit status 3. Bad input (usage, a blank value, a drive or mail
provider or runtime file that is not an installed store, a drive with no
files) ends it at once: exit status 2, one line on stderr, nothing done.
What the machine refuses (a read-only mount, a full disk, a file that is not
a database) ends it with one line and exit status 74. A drive's or mail
provider's file whose write lock another process keeps past the busy timeout
(one paused inside the service's transaction, issue 35) ends it with exit
status 4, held: that retry did nothing, and the line says ``held``.

It prints one JSON line (retries made, whether the flag stopped it, the
refusal's reason); graders count the effects from the drive's and the
provider's rows, never from this line.
"""

from __future__ import annotations

import json
import sys
import time

from crashcourse import control
from crashcourse.services import drive, mail
from crashcourse.services.broker import CredentialRefused
from crashcourse.store import StoreMissing, opened
from crashcourse.validate import check_number
from crashcourse.workers.options import (
    check_installed,
    one_line_errors,
    refuse,
    text_options,
    whole_number,
)

USAGE = ("usage: wedged_worker --drive PATH --mail PATH --credential TOKEN"
         " [--runtime PATH] [--limit N] [--pace SECONDS]")
REFUSED = 3  # exit status once a service refused the credential
HELD = 4  # exit status: a service's file kept locked by another process
OWNER = "owner@shop.example"
MAIL_EVERY = 4  # every fourth retry is a mail, the others renames


def parse(argv: list[str]) -> dict:
    """``--name value`` pairs, checked; ValueError, one line: what is wrong,
    then the usage (chapter 09)."""
    options = text_options(argv, ("drive", "mail", "credential"),
                           {"limit": "100000", "pace": "0.005", "runtime": None},
                           USAGE)
    try:  # ASCII only, finite: float() alone takes inf, nan and "٣" (issue 35)
        limit = whole_number(options["limit"])
        pace = check_number("--pace", options["pace"], 0, 1)
    except ValueError:
        limit = pace = -1
    if not (0 < limit <= 1_000_000 and 0 <= pace <= 1):
        raise ValueError(f"--limit must be 1 to 1000000 and --pace 0 to 1 "
                         f"second; {USAGE}")
    return {**options, "limit": limit, "pace": pace}


def retry(options: dict, file_id: str, turn: int) -> None:
    """One retry inside the hung step: a mail every ``MAIL_EVERY``, else a
    rename of the step's file to a name of its own (chapter 09)."""
    if turn % MAIL_EVERY == MAIL_EVERY - 1:
        mail.submit(options["mail"], OWNER, "still working", f"retry {turn}",
                    {mail.KEY_HEADER: f"wedged/{file_id}/{turn}"},
                    credential=options["credential"])
    else:
        drive.rename_to(options["drive"], file_id, f"{file_id}-try-{turn:06d}.pdf",
                        credential=options["credential"])


def paused(options: dict) -> bool:
    """The flag, asked at a step boundary only; no ``--runtime``: never set."""
    if options.get("runtime") is None:
        return False
    with opened(options["runtime"]) as conn:
        return control.is_paused(conn)


@one_line_errors(held=HELD)
def main(argv: list[str] | None = None) -> int:
    """Step through the files, hanging in each step until ``--limit`` retries
    (chapter 09); stops at a boundary when the flag is set."""
    try:
        options = parse(sys.argv[1:] if argv is None else argv)
        check_installed((options["drive"], drive.TABLES),
                        (options["mail"], mail.TABLES),
                        *([(options["runtime"], ("runtime_control",))]
                          if options.get("runtime") else []))
        files = sorted(drive.names(options["drive"]))
        if not files:
            raise ValueError("the drive has no files to rename")
    except (ValueError, StoreMissing) as bad:
        return refuse(bad)
    retries = 0
    for file_id in files:
        if paused(options):  # the step boundary: the only place it looks
            return said({"retries": retries, "stopped_by_flag": True}, 0)
        for _ in range(options["limit"]):  # the hung step: no flag in here
            try:
                retry(options, file_id, retries)
            except CredentialRefused as refused:
                return said({"retries": retries, "refused": refused.reason},
                            REFUSED)
            retries += 1
            time.sleep(options["pace"])
    return said({"retries": retries, "stopped_by_flag": False}, 0)


def said(report: dict, status: int) -> int:
    """Print the one JSON line; the exit status."""
    print(json.dumps(report, sort_keys=True))
    return status


if __name__ == "__main__":
    sys.exit(main())
