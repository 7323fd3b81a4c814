"""The worker of chapter 07: run a stored plan through the journal.

    python -m crashcourse.workers.journal_worker --dir DIR --task TASK \\
        [--probe correct|filename-only] [--credential TOKEN] [--resume-by WHO]

``DIR`` holds three SQLite files: ``journal.sqlite`` (the assistant's own: the
stored plan and the journal), ``drive.sqlite`` and ``mail.sqlite`` (the
outside world). The same command starts a run and resumes one: the journal
decides what is left. Each step announces four boundaries,
``step-N:before_intent`` ... ``step-N:after_outcome``, where the parent may
kill it. The plan's gate is checked before its intent: when the drive no
longer fits the plan the run ends with exit status 3, nothing mailed. Bad
input (usage, a blank value, a task with no stored plan, a ``DIR`` whose three
files are not installed stores) ends it at once: exit status 2, one line on
stderr, nothing created or written.

The drive and the mail provider are called by the paths of their files, like
every service; the journal file is the worker's own, opened once. It imports
only sqlite3, json and the crashcourse modules the steps need, so a campaign
of hundreds of kills is not spent starting interpreters. It prints one JSON
line saying what it did; graders never read it.

Chapter 09: the worker reads the in-band pause flag (``control.is_paused``,
in the journal file) before every step and ends its run at the next step
boundary when it is set, with nothing in doubt. ``--credential`` is presented
to guarded services (a revoked one stops every effect, whatever the worker
does). ``--resume-by WHO`` is the person's resume (``decisions.resume``): the
plan's gates are checked again first; a failing gate ends the run with exit
status 3 and nothing done, as in any run.
"""

from __future__ import annotations

import json
import os
import sys

from crashcourse import control, decisions, journal
from crashcourse.plan import GateFailed, Plan, UnknownTask, load_plan, save_plan
from crashcourse.services import drive, mail
from crashcourse.services.broker import CredentialRefused
from crashcourse.store import StoreMissing, opened
from crashcourse.workers.options import check_installed, refuse, text_options

PROBES = ("correct", "filename-only")


def paths(directory: str) -> dict[str, str]:
    """Where the journal, the drive and the mail provider keep their files.

    Introduced in chapter 07."""
    return {name: os.path.join(directory, f"{name}.sqlite")
            for name in ("journal", "drive", "mail")}


def build_world(directory: str, plan: Plan | None = None, *,
                broker: str | None = None) -> str:
    """A fresh world in ``directory``: the 40 scans on the drive, an empty mail
    provider, ``plan`` (the restock plan) stored beside the journal. Returns
    the task id (chapter 07). With ``broker`` both services are guarded by
    that credential broker (chapter 09)."""
    # Here, not at the top: the worker process itself only loads stored plans,
    # and the example pulls in the chapter 06 modules it would never use.
    from crashcourse.example import restock_plan, scan_files

    where = paths(directory)
    drive.install(where["drive"], scan_files(), broker=broker)
    mail.install(where["mail"], broker=broker)
    with opened(where["journal"]) as conn:
        task = save_plan(conn, plan or restock_plan())
        journal.install(conn)
    return task


def restock_actions(drive_path: str, mail_path: str, probe: str = "correct",
                    *, credential: str | None = None) -> dict:
    """The running example's actions, bound to the two services (chapter 07).

    ``drive_path`` and ``mail_path`` are the services' files (their addresses).
    The gate ``verify_drive`` checks ``drive_fits``. Chapter 09 adds the
    rename's restore and the ``credential`` presented with every effect.
    """
    if probe not in PROBES:
        raise ValueError(f"probe must be one of {PROBES}")
    by_id = drive.probe_rename if probe == "correct" else drive.probe_rename_by_name

    def rename(args: dict, operation_key: str) -> dict:
        return drive.rename_to(drive_path, args["file_id"], args["name"],
                               credential=credential)

    def renamed(args: dict, operation_key: str) -> tuple[bool, dict]:
        return by_id(drive_path, args["file_id"], args["name"])

    def rename_back(args: dict, before: dict, operation_key: str) -> dict:
        return drive.rename_to(drive_path, args["file_id"], before["name"],
                               credential=credential)

    def send(args: dict, operation_key: str) -> dict:
        return mail.submit(mail_path, args["to"], args["subject"], args["body"],
                           {mail.KEY_HEADER: operation_key}, credential=credential)

    def sent(args: dict, operation_key: str) -> tuple[bool, dict]:
        return mail.probe_sent(mail_path, operation_key)

    def fits(args: dict, operation_key: str) -> tuple[bool, dict]:
        return drive_fits(drive_path, args["names"])

    def verify(args: dict, operation_key: str) -> dict:
        return fits(args, operation_key)[1]  # checked already, before the intent

    return {"rename": journal.Action(rename, renamed, rename_back),
            "send_mail": journal.Action(send, sent),
            "verify_drive": journal.Action(verify, fits)}


def drive_fits(drive_path: str, names: dict[str, str]) -> tuple[bool, dict]:
    """The gate's check: does the plan still fit the drive? Every file it
    renames is there, and no other file holds a name it gives (chapter 07)."""
    files = drive.names(drive_path, owner=None)
    wanted = {name: file_id for file_id, name in names.items()}
    problems = [f"{file_id} is missing" for file_id in names if file_id not in files]
    problems += [f"{other} is already called {name}" for other, name in files.items()
                 if name in wanted and wanted[name] != other]
    return not problems, {"checked": len(names), "problems": sorted(problems)}


USAGE = ("usage: journal_worker --dir DIR --task TASK [--probe correct|filename-only]"
         " [--credential TOKEN] [--resume-by WHO]")
REFUSED = 3  # exit status: a gate failed or a credential was refused
# Exit status 2 (options.BAD_INPUT): bad usage, a blank value, or a DIR whose
# journal, drive or mail file is not an installed store; one line on stderr.


def parse(argv: list[str]) -> dict[str, str]:
    """``--name value`` pairs, none blank; ValueError, one line, for bad usage
    or a DIR that is not a directory (``options.text_options``) (chapter 07)."""
    options = text_options(argv, ("dir", "task"),
                           {"probe": PROBES[0], "credential": None, "resume-by": None},
                           USAGE)
    if options["probe"] not in PROBES:
        raise ValueError(f"--probe must be one of {PROBES}; {USAGE}")
    if not os.path.isdir(options["dir"]):
        raise ValueError(f"--dir {options['dir']!r} is not a directory")
    return options


def check_world(where: dict[str, str]) -> None:
    """The journal (with its plan), the drive and the mail provider are
    installed stores; else ``StoreMissing``, nothing created (chapter 07)."""
    check_installed((where["journal"], ("plans", "journal")),
                    (where["drive"], drive.TABLES), (where["mail"], mail.TABLES))


def resume_command(directory: str, task: str, who: str) -> list[str]:
    """The exact command that resumes ``task`` as ``who`` decided (chapter 09)."""
    return [sys.executable, "-m", "crashcourse.workers.journal_worker",
            "--dir", str(directory), "--task", task, "--resume-by", who]


def main(argv: list[str] | None = None) -> int:
    """Load the stored plan and run or resume it through the journal (chapter 07).

    Stops at a step boundary when paused; ``--resume-by`` (chapter 09)."""
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        where = paths(args["dir"])
        check_world(where)
    except (ValueError, StoreMissing) as bad:
        return refuse(bad)
    actions = restock_actions(where["drive"], where["mail"], args["probe"],
                              credential=args.get("credential"))
    with opened(where["journal"]) as conn:
        try:
            plan = load_plan(conn, args["task"])  # a read
        except UnknownTask:
            return refuse(f"no plan is stored for task {args['task']!r}")
        try:
            if "resume-by" in args:
                done = decisions.resume(conn, args["task"], actions,
                                        who=args["resume-by"])["done"]
            else:
                done = journal.run_plan(conn, args["task"], plan, actions,
                                        should_stop=lambda: control.is_paused(conn))
        except (GateFailed, CredentialRefused, decisions.DecisionRefused) as refused:
            print(json.dumps({"refused": str(refused)}, sort_keys=True))
            return REFUSED
    print(json.dumps(done, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
