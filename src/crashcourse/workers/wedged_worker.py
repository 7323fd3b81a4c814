"""The wedged worker of chapter 09: a loop that never reads the pause flag.

    python -m crashcourse.workers.wedged_worker --drive PATH --mail PATH \\
        --credential TOKEN [--limit N] [--pace SECONDS]

It stands for an agent stuck in a loop: it renames the drive's files over and
over (each time to a new name, so every request changes something) and
submits a mail every fourth turn, presenting its credential each time. It
never opens the runtime's store, so the in-band pause flag cannot reach it;
only the services' answer can. The first refusal (a revoked or expired
credential) ends it with exit status 3; otherwise it stops after ``--limit``
actions (exit 0), or when it is killed. Bad input (usage, a blank value, a
drive or mail provider that is not an installed store, a drive with no files)
ends it at once: exit status 2, one line on stderr, nothing done.

It prints one JSON line (actions made, the refusal's reason); graders count
the effects from the drive's and the provider's rows, never from this line.
"""

from __future__ import annotations

import json
import sys
import time

from crashcourse.services import drive, mail
from crashcourse.services.broker import CredentialRefused
from crashcourse.store import StoreMissing
from crashcourse.workers.options import check_installed, refuse, text_options

USAGE = ("usage: wedged_worker --drive PATH --mail PATH --credential TOKEN"
         " [--limit N] [--pace SECONDS]")
REFUSED = 3  # exit status once a service refused the credential
OWNER = "owner@shop.example"
MAIL_EVERY = 4  # every fourth action is a mail, the others renames


def parse(argv: list[str]) -> dict:
    """``--name value`` pairs, checked; ValueError, one line: what is wrong,
    then the usage (chapter 09)."""
    options = text_options(argv, ("drive", "mail", "credential"),
                           {"limit": "100000", "pace": "0.005"}, USAGE)
    try:
        limit, pace = int(options["limit"]), float(options["pace"])
    except ValueError:
        limit = pace = -1
    if not (0 < limit <= 1_000_000 and 0 <= pace <= 1):  # NaN fails too
        raise ValueError(f"--limit must be 1 to 1000000 and --pace 0 to 1 "
                         f"second; {USAGE}")
    return {**options, "limit": limit, "pace": pace}


def act(options: dict, files: list[str], turn: int) -> None:
    """One turn: a mail every ``MAIL_EVERY`` turns, else a rename (chapter 09)."""
    if turn % MAIL_EVERY == MAIL_EVERY - 1:
        mail.submit(options["mail"], OWNER, "still working", f"turn {turn}",
                    {mail.KEY_HEADER: f"wedged/{turn}"},
                    credential=options["credential"])
    else:
        file_id = files[turn % len(files)]
        drive.rename_to(options["drive"], file_id, f"loop-{turn:06d}.pdf",
                        credential=options["credential"])


def main(argv: list[str] | None = None) -> int:
    """Loop until refused, killed or ``--limit`` actions are made (chapter 09)."""
    try:
        options = parse(sys.argv[1:] if argv is None else argv)
        check_installed((options["drive"], drive.TABLES),
                        (options["mail"], mail.TABLES))
        files = sorted(drive.names(options["drive"]))
        if not files:
            raise ValueError("the drive has no files to rename")
    except (ValueError, StoreMissing) as bad:
        return refuse(bad)
    for turn in range(options["limit"]):
        try:
            act(options, files, turn)
        except CredentialRefused as refused:
            print(json.dumps({"actions": turn, "refused": refused.reason}))
            return REFUSED
        time.sleep(options["pace"])  # no flag is read here, ever
    print(json.dumps({"actions": options["limit"], "refused": None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
