"""The worker of chapter 07: run a stored plan through the journal.

    python -m crashcourse.workers.journal_worker --dir DIR --task TASK \\
        [--probe correct|filename-only]

``DIR`` holds three SQLite files: ``journal.sqlite`` (the assistant's own: the
stored plan and the journal), ``drive.sqlite`` and ``mail.sqlite`` (the
outside world). The same command starts a run and resumes one: the journal
decides what is left. Each step announces four boundaries,
``step-N:before_intent`` ... ``step-N:after_outcome``, where the parent may
kill it.

The drive and the mail provider are called by the paths of their files, like
every service; the journal file is the worker's own, opened once. It imports
only sqlite3, json and the crashcourse modules the steps need, so a campaign
of hundreds of kills is not spent starting interpreters. It prints one JSON
line saying what it did; graders never read it.
"""

from __future__ import annotations

import json
import os
import sys

from crashcourse import journal
from crashcourse.plan import Plan, load_plan, save_plan
from crashcourse.services import drive, mail
from crashcourse.store import opened

PROBES = ("correct", "filename-only")


def paths(directory: str) -> dict[str, str]:
    """Where the journal, the drive and the mail provider keep their files.

    Introduced in chapter 07."""
    return {name: os.path.join(directory, f"{name}.sqlite")
            for name in ("journal", "drive", "mail")}


def build_world(directory: str, plan: Plan | None = None) -> str:
    """A fresh world in ``directory``: the 40 scans on the drive, an empty mail
    provider, ``plan`` (the restock plan) stored beside the journal. Returns
    the task id (chapter 07)."""
    # Here, not at the top: the worker process itself only loads stored plans,
    # and the example pulls in the chapter 06 modules it would never use.
    from crashcourse.example import restock_plan, scan_files

    where = paths(directory)
    drive.install(where["drive"], scan_files())
    mail.install(where["mail"])
    with opened(where["journal"]) as conn:
        task = save_plan(conn, plan or restock_plan())
        journal.install(conn)
    return task


def restock_actions(drive_path: str, mail_path: str,
                    probe: str = "correct") -> dict:
    """The running example's actions, bound to the two services (chapter 07).

    ``drive_path`` and ``mail_path`` are the services' files (their addresses).
    """
    if probe not in PROBES:
        raise ValueError(f"probe must be one of {PROBES}")
    by_id = drive.probe_rename if probe == "correct" else drive.probe_rename_by_name

    def rename(args: dict, operation_key: str) -> dict:
        return drive.rename_to(drive_path, args["file_id"], args["name"])

    def renamed(args: dict, operation_key: str) -> tuple[bool, dict]:
        return by_id(drive_path, args["file_id"], args["name"])

    def send(args: dict, operation_key: str) -> dict:
        return mail.submit(mail_path, args["to"], args["subject"], args["body"],
                           {mail.KEY_HEADER: operation_key})

    def sent(args: dict, operation_key: str) -> tuple[bool, dict]:
        return mail.probe_sent(mail_path, operation_key)

    return {"rename": journal.Action(rename, renamed),
            "send_mail": journal.Action(send, sent)}


USAGE = "usage: journal_worker --dir DIR --task TASK [--probe correct|filename-only]"


def parse(argv: list[str]) -> dict[str, str]:
    """``--name value`` pairs; argparse would cost every trial ~20 ms to import.

    Introduced in chapter 07."""
    if len(argv) % 2 or not all(a.startswith("--") for a in argv[::2]):
        raise SystemExit(USAGE)
    options = {"probe": "correct", **dict(zip((a[2:] for a in argv[::2]),
                                              argv[1::2], strict=True))}
    if set(options) != {"dir", "task", "probe"} or options["probe"] not in PROBES:
        raise SystemExit(USAGE)
    return options


def main(argv: list[str] | None = None) -> int:
    """Load the stored plan and run or resume it through the journal (chapter 07)."""
    args = parse(sys.argv[1:] if argv is None else argv)
    where = paths(args["dir"])
    actions = restock_actions(where["drive"], where["mail"], args["probe"])
    with opened(where["journal"]) as conn:
        plan = load_plan(conn, args["task"])
        done = journal.run_plan(conn, args["task"], plan, actions)
    print(json.dumps(done, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
