"""The worker of chapter 07: run a stored plan through the journal, under a claim.

    python -m crashcourse.workers.journal_worker --dir DIR --task TASK \\
        [--probe correct|filename-only] [--ttl S] [--wait S] [--owner NAME] \\
        [--credential TOKEN | --broker PATH] [--resume-by WHO]

``DIR`` holds three SQLite files: ``journal.sqlite`` (the assistant's own: the
stored plan, the journal, and the task's work row with its claims),
``drive.sqlite`` and ``mail.sqlite`` (the outside world). The same command
starts a run and resumes one: the journal decides what is left.

The run first claims the task (chapter 05: the task is queued as work in the
journal's own file, once, and claimed as ``--owner`` for ``--ttl`` seconds,
default 3). Every journal write is fenced (chapter 06), an intent's commit
renews the lease once a quarter of it is spent, and right before each
request leaves, the step is admitted: this run still holds the task and the
action's declared wait (``--wait``, default 1 s, below the lease) fits in
what is left of it. Each
step announces five boundaries where the parent may hold or kill it,
``step-N:before_intent``, ``after_intent``, ``admitted`` (checked, not yet
sent), ``after_action`` and ``after_outcome``. The plan's gate is checked
before its intent.

Exit status, and what the one JSON line on stdout says (graders never read
it):

0  the plan is finished (now or before), or the pause flag stopped the run
   at a step boundary with nothing in doubt;
2  bad input (usage, a blank value, a lease or wait out of range, a task
   with no stored plan, a ``DIR`` whose three files are not installed,
   sound stores: damaged, cut short, 0 bytes): one line on stderr, nothing
   created or written;
3  refused: a gate failed, a credential was refused (or, with ``--broker``,
   not issued), the person's decision was refused, or the task was
   cancelled (unwound); nothing mailed after it;
4  held: another holder's lease on the task is live, or another holder keeps
   the journal's write lock past the busy timeout (one paused mid-write,
   issue 35: not the machine refusing); the transaction that waited wrote
   nothing; or a process keeps the drive's or the mail provider's lock past
   the declared wait (a holder paused inside the service's transaction, in
   its residual window): the service did nothing for this run, and the step
   stays in doubt for the next holder's probe;
5  stale: this run lost the task mid-run (superseded, its lease expired, or
   a step's declared wait no longer fit in it): it sent nothing after the
   refusal, and the step it had not recorded stays in doubt for the next
   holder's probe;
74 the machine refused a file mid-run (a full disk, a read-only mount): one
   line on stderr; what committed before stays, as after a kill.

The drive and the mail provider are called by the paths of their files, like
every service; the journal file is the worker's own, opened once. It imports
only sqlite3, json and the crashcourse modules the steps need, so a campaign
of hundreds of kills is not spent starting interpreters.

Chapter 09: the worker reads the in-band pause flag (``control.is_paused``,
in the journal file) before every step, and the fence reads it in every
intent's transaction and every admission's read: the run ends at the next step
boundary with nothing in doubt. ``--credential`` is presented to guarded
services (a revoked one stops every effect, whatever the worker does);
``--broker PATH`` instead asks that broker for a credential for ``--owner``
at start, which a holder revoked since a person last granted it does not
get (``broker.HolderStopped``: exit status 3, nothing written).
``--resume-by WHO`` is the person's resume (``decisions.resume``): the
plan's gates are checked again first, the lease of a holder that stopped
working is waited out, and a failing gate ends the run with exit status 3
and nothing done, as in any run.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from contextlib import contextmanager

from crashcourse import claims, control, journal
from crashcourse.journal import decisions
from crashcourse.journal.plan import GateFailed, Plan, UnknownTask, load_plan, save_plan
from crashcourse.services import broker, drive, mail
from crashcourse.services.broker import CredentialRefused, HolderStopped
from crashcourse.store import StoreMissing, opened
from crashcourse.validate import seconds
from crashcourse.workers.options import (
    check_installed,
    one_line_errors,
    refuse,
    text_options,
)

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["PROBE_VARIANTS", "paths", "build_world", "restock_actions",
    "drive_fits", "USAGE", "SCOPE", "CREDENTIAL_TTL_S", "REFUSED", "HELD",
    "ServiceLocked", "STALE", "OWNER", "parse", "check_world", "resume_command",
    "main", "said"]

# How a resumed run probes a step in doubt: the right probe, or the mutant
# that reads the file's name alone (chapter 07's negative control).
PROBE_VARIANTS = ("correct", "filename-only")


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
    from crashcourse.lab.example import restock_plan, scan_files

    where = paths(directory)
    drive.install(where["drive"], scan_files(), broker=broker)
    mail.install(where["mail"], broker=broker)
    with opened(where["journal"]) as conn:
        task = save_plan(conn, plan or restock_plan())
        journal.install(conn)
    return task


def restock_actions(drive_path: str, mail_path: str, probe: str = "correct",
                    *, credential: str | None = None,
                    wait_s: float = journal.DEFAULT_WAIT_S) -> dict:
    """The running example's actions, bound to the two services (chapter 07).

    ``drive_path`` and ``mail_path`` are the services' files (their addresses).
    The gate ``verify_drive`` checks ``drive_fits``. A rename carries the
    step's operation key, which the drive keeps: a second request under it is
    a replay. The mail provider takes no key; the key travels in the
    ``X-Operation-Key`` header, where the probe finds it. A rename's restore
    is a compare-and-set (``expect``: chapter 09). Each action declares
    ``wait_s``, and every write it makes keeps to it: the service waits at
    most ``wait_s`` for its file's lock (another writer holding it), then
    gives up with nothing written (``sqlite3.OperationalError``), and the
    step stays in doubt for the next run's probe. The probes only read, and
    a read never waits for a writer in WAL mode. What no timeout bounds is
    a process paused inside the service's transaction: that is the residual
    window (chapter 07). Chapter 09 adds the rename's restore and the
    ``credential`` presented with every effect.
    """
    if probe not in PROBE_VARIANTS:
        raise ValueError(f"probe must be one of {PROBE_VARIANTS}")
    by_id = drive.probe_rename if probe == "correct" else drive.probe_rename_by_name
    busy_ms = max(1, int(wait_s * 1000))  # the declaration, as the lock wait

    @contextmanager
    def waited(service: str):  # the service's lock, not the journal's
        try:
            yield
        except sqlite3.OperationalError as busy:
            if "database is locked" not in str(busy):
                raise  # the machine (74)
            raise ServiceLocked(
                f"the {service}'s file stayed locked past the declared wait"
                f" ({wait_s} s; a process paused inside its transaction?): it did"
                " nothing for this run, and the step stays in doubt for the next"
                " holder's probe") from None

    def rename(args: dict, operation_key: str) -> dict:
        with waited("drive"):
            return drive.rename_to(drive_path, args["file_id"], args["name"],
                                   credential=credential,
                                   operation_key=operation_key,
                                   busy_timeout_ms=busy_ms)

    def renamed(args: dict, operation_key: str) -> tuple[bool, dict]:
        return by_id(drive_path, args["file_id"], args["name"])

    def rename_back(args: dict, before: dict, operation_key: str) -> dict:
        try:  # only while the file still has the name this run gave it
            with waited("drive"):
                return drive.rename_to(drive_path, args["file_id"], before["name"],
                                       credential=credential,
                                       operation_key=operation_key,
                                       expect=args["name"],
                                       busy_timeout_ms=busy_ms)
        except drive.NameChanged as changed:
            raise decisions.ChangedSince(str(changed), {
                "file_id": changed.file_id, "name": changed.found}) from None

    def send(args: dict, operation_key: str) -> dict:
        with waited("mail provider"):
            return mail.submit(mail_path, args["to"], args["subject"], args["body"],
                               {mail.KEY_HEADER: operation_key},
                               credential=credential, busy_timeout_ms=busy_ms)

    def sent(args: dict, operation_key: str) -> tuple[bool, dict]:
        return mail.probe_sent(mail_path, operation_key)

    def fits(args: dict, operation_key: str) -> tuple[bool, dict]:
        return drive_fits(drive_path, args["names"])

    def verify(args: dict, operation_key: str) -> dict:
        return fits(args, operation_key)[1]  # checked already, before the intent

    return {"rename": journal.Action(rename, renamed, rename_back, wait_s),
            "send_mail": journal.Action(send, sent, None, wait_s),
            "verify_drive": journal.Action(verify, fits, None, wait_s)}


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
         " [--ttl S] [--wait S] [--owner NAME] [--credential TOKEN | --broker PATH]"
         " [--resume-by WHO]")
SCOPE = f"{drive.RENAME} {mail.SUBMIT}"  # what a credential from --broker allows
CREDENTIAL_TTL_S = 600.0  # one run's credential: well under the broker's cap
REFUSED = 3  # exit status: a gate failed, a credential or decision was refused
HELD = 4  # exit status: another holder's lease is live; nothing written


class ServiceLocked(sqlite3.OperationalError):
    """A service's file (the drive's, the mail provider's) stayed locked
    past the action's declared wait: the service did nothing for this call,
    which stays in doubt (issue 35). Not the journal's lock: the line says
    whose."""
STALE = 5  # exit status: the run lost its claim; nothing sent after that
OWNER = "journal-worker"  # the claim's owner unless --owner says otherwise
# Exit status 2 (options.BAD_INPUT): bad usage, a blank value, or a DIR whose
# journal, drive or mail file is not an installed store; one line on stderr.


def parse(argv: list[str]) -> dict:
    """``--name value`` pairs, none blank; ValueError, one line, for bad usage,
    a lease or wait out of range, or a DIR that is not a directory
    (``options.text_options``) (chapter 07)."""
    options = text_options(argv, ("dir", "task"),
                           {"probe": PROBE_VARIANTS[0], "credential": None,
                            "resume-by": None, "broker": None,
                            "ttl": str(journal.DEFAULT_TTL_S),
                            "wait": str(journal.DEFAULT_WAIT_S), "owner": OWNER},
                           USAGE)
    if options["probe"] not in PROBE_VARIANTS:
        raise ValueError(f"--probe must be one of {PROBE_VARIANTS}; {USAGE}")
    for name in ("ttl", "wait"):
        try:
            options[name] = seconds(options[name])
        except ValueError:
            raise ValueError(f"--{name} must be a number of seconds") from None
    try:
        claims.check_lease(options["owner"], options["ttl"])
    except (TypeError, ValueError) as bad:
        raise ValueError(f"--ttl: {bad}") from None
    if not 0 < options["wait"] < options["ttl"]:  # NaN fails too
        raise ValueError(f"--wait must be above 0 and below --ttl, got"
                         f" {options['wait']}")
    if not os.path.isdir(options["dir"]):
        raise ValueError(f"--dir {options['dir']!r} is not a directory")
    if options.get("credential") and options.get("broker"):
        raise ValueError(f"--credential or --broker, not both; {USAGE}")
    return options


def check_world(where: dict[str, str]) -> None:
    """The journal (with its plan), the drive and the mail provider are
    installed, sound stores; else ``StoreMissing`` (``StoreDamaged``), nothing
    created or written (chapter 07). The journal gets the full integrity
    check, as the outside world's files do: a damaged index there hides a
    work row, a claim or an intent from its lookup, and the run would claim,
    or act, as if it were not recorded (issue 35)."""
    check_installed((where["journal"], ("plans", "journal", "work", "claims")),
                    (where["drive"], drive.TABLES), (where["mail"], mail.TABLES))


def resume_command(directory: str, task: str, who: str,
                   broker_path: str | None = None) -> list[str]:
    """The exact command that resumes ``task`` as ``who`` decided; with
    ``broker_path`` it asks that broker for its credential (chapter 09)."""
    asks = [] if broker_path is None else ["--broker", str(broker_path)]
    return [sys.executable, "-m", "crashcourse.workers.journal_worker",
            "--dir", str(directory), "--task", task, *asks, "--resume-by", who]


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Load the stored plan, claim the task and run or resume the plan through
    the journal (chapter 07). Stops at a step boundary when paused;
    ``--resume-by`` (chapter 09)."""
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        where = paths(args["dir"])
        check_world(where)
        if args.get("broker"):
            check_installed((args["broker"], broker.TABLES))
    except (ValueError, StoreMissing) as bad:
        return refuse(bad)
    credential = args.get("credential")
    if args.get("broker"):
        try:  # a holder the person stopped gets none until they grant it again
            credential = broker.issue(args["broker"], args["owner"], SCOPE,
                                      CREDENTIAL_TTL_S)
        except HolderStopped as stopped:
            return said({"refused": str(stopped)}, REFUSED)
    actions = restock_actions(where["drive"], where["mail"], args["probe"],
                              credential=credential, wait_s=args["wait"])
    lease = {"owner": args["owner"], "ttl": args["ttl"]}
    with opened(where["journal"]) as conn:
        try:
            plan = load_plan(conn, args["task"])  # a read
        except UnknownTask:
            return refuse(f"no plan is stored for task {args['task']!r}")
        try:
            if "resume-by" in args:
                done = decisions.resume(conn, args["task"], actions,
                                        who=args["resume-by"], **lease)["done"]
            else:
                done = journal.run_task(conn, args["task"], plan, actions, **lease,
                                        should_stop=lambda: control.is_paused(conn))
        except (GateFailed, CredentialRefused, decisions.DecisionRefused,
                journal.TaskCancelled) as refused:
            return said({"refused": str(refused)}, REFUSED)
        except (journal.TaskHeld, journal.HolderMayStillAct, ServiceLocked) as held:
            return said({"held": str(held)}, HELD)
        except sqlite3.OperationalError as busy:
            if "database is locked" not in str(busy):  # SQLite's, or the adapter's
                raise  # a full disk, an I/O error: the machine (74)
            return said({"held": "another process kept the journal's write lock"
                                 " past the busy timeout (a holder paused"
                                 " mid-write?); this run's waiting transaction"
                                 " wrote nothing"}, HELD)
        except PermissionError as stale:  # fence.StaleClaim, orders.LeaseTooShort
            return said({"stale": str(stale)}, STALE)
    return said(done, 0)


def said(report: dict, status: int) -> int:
    """Print the run's one JSON line; its exit status."""
    print(json.dumps(report, sort_keys=True))
    return status


if __name__ == "__main__":
    sys.exit(main())
