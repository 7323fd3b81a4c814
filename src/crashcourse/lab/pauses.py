"""Pause campaigns: SIGSTOP a real worker at any instant of its life (issue 29).

    python -m crashcourse.lab.pauses --output FILE [--trials N] [--seed S]
        [--mode all|takeover,cancel,revoke] [--ttl S] [--wait S] [--renames N]

The book's mechanisms were shown against a worker killed or frozen at a NAMED
boundary. Here chapter 07's journal worker (``crashcourse.workers.
journal_worker``, the real process) is frozen with SIGSTOP at an instant drawn
uniformly over its measured life (a seeded ``random.Random``; the seed and
each instant are recorded): inside a journal transaction, inside a service's,
between its admission and the service's commit, or starting up. While it is
frozen:

- its lease runs out because the experiment WAITS for it (the store's clock,
  a bounded wait; nothing rewrites ``expires``);
- ``takeover`` (chapter 07): a replacement process claims the task and
  resumes it; once its claim is in the work row the frozen one is thawed and
  both run to their end;
- ``cancel`` (chapter 09's stop): a person cancels the task
  (``journal.cancel_task``), a replacement is started (it must do nothing),
  and the frozen one is thawed;
- ``revoke`` (chapter 09's kill switch): the same, in a world whose drive and
  mail provider are guarded by a credential broker; the person revokes the
  frozen holder's credentials (``broker.revoke_holder``) and cancels.

Every wait is bounded. A cancel that cannot commit because the frozen holder
holds the journal's write lock is recorded (``stop_blocked_s``): the holder
is thawed and the cancel tried again, as the person would.

The grader reads durable rows only: the drive's ``rename_requests`` (a rename
that changed a file), the mail provider's ``messages`` (each carries the
step's key in a header) and the journal as it stood at the freeze. Never exit
codes, never a worker's own report. A trial BREAKS when

- an effect landed twice for one step's key (``nothing twice``), or one
  landed after the cancel committed (``stop when told``),
- and that key is not the step the frozen holder had in doubt when it was
  frozen (an intent of its generation with no outcome). That one step is the
  residual window of chapter 07: a holder admitted and frozen before the
  service's commit sends when it thaws, and a mail provider that takes no key
  cannot refuse it. Those are counted apart (``residual``), never hidden.

Every campaign runs the same instants against the negative control
(``crashcourse.workers.unfenced_journal_worker``, the worker with its fence
taken out): its thawed holder is never refused, and the campaign must catch
it. The command exits 0 only when the real worker never breaks and the
control breaks at least once.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crashcourse import claims, journal, store
from crashcourse.journal.plan import Plan, Step, order_plan, save_plan
from crashcourse.services import broker, drive, mail
from crashcourse.store import opened
from crashcourse.validate import argument_parser, check_number
from crashcourse.waiting import wait_until

SRC = str(Path(__file__).resolve().parents[2])  # the folder holding crashcourse/
REAL = "crashcourse.workers.journal_worker"
CONTROL = "crashcourse.workers.unfenced_journal_worker"
MODES = ("takeover", "cancel", "revoke")
STOPS = ("cancel", "revoke")  # the modes in which a person stops the work
TTL_S, WAIT_S = 0.6, 0.15  # a short lease: every trial waits one out
SPANS = 3  # uninterrupted runs measured; the life is the longest
RUN_TIMEOUT_S = 60.0  # any one process's bound, frozen time excluded
FILES = ("journal", "drive", "mail", "broker")
RENAMES = 3  # the plan's renames (``--renames``): more make the work a longer
# share of the worker's life, so more instants land after its claim
READ_MS = 1000  # the harness's own reads while a worker is frozen
FINISHERS = 3  # takeover: runs started after both ended, while work is left


def pause_plan(renames: int = RENAMES, mails: int = 4) -> Plan:
    """A short restock plan in which mails (the service that takes no key) are
    most of the work, so an instant often lands in one: ``renames`` renames,
    the gate, then ``mails`` summaries, each to its own recipient."""
    from crashcourse.lab.example import scan_files

    steps = [Step(0, "rename", {"file_id": f, "name": f"invoice-2026-{i:03d}.pdf"})
             for i, f in enumerate(scan_files(renames), start=1)]
    names = {s.args["file_id"]: s.args["name"] for s in steps}
    steps += [Step(0, "send_mail", {"to": f"person-{i}@shop.example",
                                    "subject": "restock invoices filed",
                                    "body": f"{renames} invoices renamed"},
                   irreversible=True) for i in range(1, mails + 1)]
    steps.append(Step(0, "verify_drive", {"names": names}, gate=True))
    return order_plan("pause_restock", steps)


def build(directory: str, plan: Plan, guarded: bool = False) -> str:
    """A fresh world (the scans, an empty provider, the plan; ``guarded``: a
    credential broker both services ask): the task id."""
    from crashcourse.lab.example import scan_files

    where = paths(directory)
    fence_at = None
    if guarded:
        broker.install(where["broker"])
        fence_at = where["broker"]
    drive.install(where["drive"], scan_files(), broker=fence_at)
    mail.install(where["mail"], broker=fence_at)
    with opened(where["journal"]) as conn:
        task = save_plan(conn, plan)
        journal.install(conn)
    return task


def paths(directory: str) -> dict[str, str]:
    return {name: os.path.join(directory, f"{name}.sqlite") for name in FILES}


def copy_world(template: str, directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    for name, path in paths(template).items():
        if os.path.exists(path):  # the broker only in a guarded world
            shutil.copyfile(path, paths(directory)[name])


class Process:
    """A worker started in its own process group; only it is ever signalled."""

    def __init__(self, module: str, directory: str, task: str, owner: str,
                 ttl: float, wait: float):
        args = [sys.executable, "-S", "-m", module, "--dir", directory, "--task",
                task, "--ttl", str(ttl), "--wait", str(wait), "--owner", owner]
        if os.path.exists(paths(directory)["broker"]):  # it asks for a credential
            args += ["--broker", paths(directory)["broker"]]
        env = {**os.environ, "PYTHONPATH": SRC}
        self.log = open(os.path.join(directory, f"{owner}.log"), "wb")  # noqa: SIM115
        self.started = time.monotonic()
        self.popen = subprocess.Popen(args, stdout=self.log, stderr=self.log,
                                      env=env, start_new_session=True)
        self.frozen = False

    def signal(self, number: int) -> bool:
        """Signal the group; False when it is gone (ended and reaped)."""
        if self.popen.poll() is not None:
            return False
        try:
            os.killpg(self.popen.pid, number)
        except ProcessLookupError:
            return False
        return True

    def freeze(self) -> bool:
        self.frozen = self.signal(signal.SIGSTOP)
        return self.frozen

    def thaw(self) -> None:
        self.signal(signal.SIGCONT)
        self.frozen = False

    def wait(self, timeout: float = RUN_TIMEOUT_S) -> int | None:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def end(self) -> None:
        """Leave nothing behind: thaw (nothing is left stopped, whatever
        happens next), kill the group, reap."""
        if self.popen.poll() is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGKILL)
            self.popen.wait(timeout=10)
        self.log.close()


LOCKED = "locked"  # what a read while frozen found: a file it could not read


def while_frozen(read, *args):
    """``read(*args)``, or ``LOCKED`` when a file's lock held it past the read
    timeout (``held_out``): a process frozen while it opened a fresh WAL file
    (its recovery holds the file's index) keeps every reader out, not only
    writers."""
    from sqlite3 import OperationalError

    try:
        return read(*args)
    except OperationalError as locked:
        if not held_out(locked):
            raise
        return LOCKED


def held_out(error: Exception) -> bool:
    """A lock another process holds: "database is locked", or "locking
    protocol" (SQLITE_PROTOCOL: the WAL index stayed busy through SQLite's own
    retries, as while a process frozen in its first open of the file holds it)."""
    return "locked" in str(error) or "locking protocol" in str(error)


def holder(directory: str, task: str) -> dict | None:
    with opened(paths(directory)["journal"], busy_timeout_ms=READ_MS) as conn:
        return journal.holder(conn, task)


def in_doubt(directory: str, task: str) -> list[dict]:
    """The journal's steps with an intent and no outcome (a read)."""
    with opened(paths(directory)["journal"], busy_timeout_ms=READ_MS) as conn:
        rows = conn.execute("SELECT step, operation_key, action, generation"
                            " FROM journal WHERE task = :t AND outcome IS NULL",
                            {"t": task}).fetchall()
    return [dict(r) for r in rows]


def stamped(directory: str) -> dict[str, list[tuple[str, float]]]:
    """Each effect's key with its service's stamp (taken just before the
    service's COMMIT), for when the rows could not be read at the cancel."""
    where = paths(directory)
    with opened(where["drive"], busy_timeout_ms=READ_MS) as conn:
        renames = [tuple(r) for r in conn.execute(
            "SELECT coalesce(operation_key, file_id || '>' || name), committed_at"
            " FROM rename_requests WHERE changed = 1 ORDER BY seq")]
    with opened(where["mail"], busy_timeout_ms=READ_MS) as conn:
        mails = [tuple(r) for r in conn.execute(
            "SELECT coalesce(operation_key, ''), accepted_at FROM messages"
            " ORDER BY message_id")]
    return {"rename": renames, "send_mail": mails}


def effects(directory: str) -> dict[str, list[str]]:
    """Every effect the services hold, as the step key it came under (a rename
    that changed a file counts once per request row, replays are not
    effects; a mail once per message)."""
    where = paths(directory)
    with opened(where["drive"], busy_timeout_ms=READ_MS) as conn:
        renames = [r[0] for r in conn.execute(
            "SELECT coalesce(operation_key, file_id || '>' || name)"
            " FROM rename_requests WHERE changed = 1 ORDER BY seq")]
    with opened(where["mail"], busy_timeout_ms=READ_MS) as conn:
        mails = [r[0] for r in conn.execute(
            "SELECT coalesce(operation_key, '') FROM messages"
            " ORDER BY message_id")]
    return {"rename": renames, "send_mail": mails}


def twice(keys: list[str]) -> list[str]:
    return sorted({k for k in keys if keys.count(k) > 1})


def lease_ran_out(directory: str, task: str, generation: int) -> bool:
    with opened(paths(directory)["journal"]) as conn:
        return journal.lease_over(conn, task, generation)[0]


def cancel(directory: str, task: str, timeout_ms: int, revoke: bool = False
           ) -> float:
    """The person's stop (chapter 09): with ``revoke`` the frozen holder's
    credentials first (the kill switch), then the cancel; the instant
    (monotonic) it committed."""
    if revoke:
        broker.revoke_holder(paths(directory)["broker"], "holder-a", "person",
                             wait_ms=timeout_ms)
    with opened(paths(directory)["journal"], busy_timeout_ms=timeout_ms) as conn:
        journal.cancel_task(conn, task)
    return time.monotonic()


def measure_life(module: str, template: str, task: str, folder: str, ttl: float,
                 wait: float) -> list[float]:
    """``SPANS`` uninterrupted runs of the worker, start to exit, in seconds."""
    spans = []
    for n in range(SPANS):
        directory = os.path.join(folder, f"span-{n}")
        copy_world(template, directory)
        worker = Process(module, directory, task, "holder-a", ttl, wait)
        try:
            if worker.wait() is None:
                raise TimeoutError(f"an uninterrupted run took over {RUN_TIMEOUT_S} s")
            spans.append(round(time.monotonic() - worker.started, 4))
        finally:
            worker.end()
    return spans


def trial(number: int, mode: str, module: str, template: str, task: str,
          folder: str, instant: float, ttl: float, wait: float) -> dict:
    """One pause: freeze ``holder-a`` ``instant`` s after its start, let the
    lease run out, act (``mode``), thaw, let both end; the rows judged."""
    directory = os.path.join(folder, f"{mode}-{number}")
    copy_world(template, directory)
    started: list[Process] = []
    seen: dict = {"worker": module, "trial": number, "mode": mode,
                  "planned_s": round(instant, 4)}
    try:
        a = Process(module, directory, task, "holder-a", ttl, wait)
        started.append(a)
        if a.wait(timeout=instant) is not None:  # it ended before the instant
            seen.update(paused=False, at_s=round(time.monotonic() - a.started, 4))
            return judge(seen, directory, task, [], None)
        a.freeze()
        seen.update(paused=True, at_s=round(time.monotonic() - a.started, 4))
        row = while_frozen(holder, directory, task)
        doubt = while_frozen(in_doubt, directory, task)
        if row == LOCKED or doubt == LOCKED:  # frozen in the journal's first open
            seen["journal_unreadable_at_freeze"] = True
            row, doubt = None, []  # it opens its journal before it claims
        doubt = [d for d in doubt if row and d["generation"] == row["generation"]]
        seen["holder_at_freeze"] = row and {k: row[k] for k in ("status", "generation")}
        seen["in_doubt_at_freeze"] = doubt
        if row and row["status"] == claims.RUNNING:  # it holds a lease: wait it out
            waited = time.monotonic()
            wait_until(lambda: lease_ran_out(directory, task, row["generation"]),
                       ttl + 10, what="the frozen holder's lease run out")
            seen["lease_wait_s"] = round(time.monotonic() - waited, 4)
        cancelled_at = None
        if mode in STOPS:
            cancelled_at, blocked = stop(directory, task, a, mode == "revoke")
            seen["stop_blocked_s"] = blocked
            seen["cancelled_at_unix"] = time.time()
            # what the (maybe thawed) holder had in doubt when the cancel
            # committed: an intent written before it, its admission maybe too
            seen["in_doubt_at_cancel"] = while_frozen(in_doubt, directory, task)
            seen["effects_at_cancel"] = while_frozen(effects, directory)
        b = Process(module, directory, task, "holder-b", ttl, wait)
        started.append(b)
        if mode == "takeover":  # the replacement's claim, or its end, then thaw
            gen = row["generation"] if row else 0

            def claimed() -> bool:
                seen_now = while_frozen(holder, directory, task)
                return b.popen.poll() is not None or (
                    seen_now not in (None, LOCKED) and seen_now["generation"] > gen)

            wait_until(claimed, RUN_TIMEOUT_S, what="the replacement claim the task")
        a.thaw()
        ends = {"holder-a": a.wait(), "holder-b": b.wait()}
        if None in ends.values():
            raise TimeoutError(f"a worker ran past {RUN_TIMEOUT_S} s: {ends}")
        for n in range(FINISHERS):  # the work left unfinished: run it to its end
            if mode != "takeover" or finished(directory, task):
                break
            wait_until(lambda: lease_free(directory, task), ttl + 10,
                       what="a lease left by the two to run out and its retry delay")
            c = Process(module, directory, task, f"holder-c{n}", ttl, wait)
            started.append(c)
            if c.wait() is None:
                raise TimeoutError("a finishing run did not end")
            seen["third_run"] = n + 1
        at_cancel = seen.get("in_doubt_at_cancel")
        if at_cancel not in (None, LOCKED):
            doubt = doubt + at_cancel
        return judge(seen, directory, task, doubt, seen.get("effects_at_cancel"),
                     cancelled=cancelled_at is not None)
    finally:
        for process in started:
            process.end()


def stop(directory: str, task: str, frozen: Process, revoke: bool = False
         ) -> tuple[float, float | None]:
    """Stop (``cancel``); if the frozen holder holds the journal's write lock,
    or the broker's (inside a guarded write), the stop waits 1 s and fails:
    then thaw it (what the person must do) and stop again. The instant it
    committed and how long it could not (None: at once)."""
    from sqlite3 import OperationalError

    began = time.monotonic()
    try:
        return cancel(directory, task, 1000, revoke), None
    except (OperationalError, broker.RevocationBlocked) as locked:
        if not held_out(locked) and not isinstance(locked, broker.RevocationBlocked):
            raise
    frozen.thaw()
    try:
        at = cancel(directory, task, int(RUN_TIMEOUT_S * 1000), revoke)
    except ValueError:  # revoked the first time, the cancel was the one locked
        at = cancel(directory, task, int(RUN_TIMEOUT_S * 1000))
    return at, round(at - began, 4)


def finished(directory: str, task: str) -> bool:
    with opened(paths(directory)["journal"]) as conn:
        return (journal.holder(conn, task) or {}).get("status") == claims.DONE


def lease_free(directory: str, task: str) -> bool:
    """No live lease on the task, and its retry delay (``available_after``,
    set when a holder gives the work back) has passed: a claim may succeed."""
    row = holder(directory, task)
    if row is not None and row["status"] == claims.RUNNING and not lease_ran_out(
            directory, task, row["generation"]):
        return False
    with opened(paths(directory)["journal"], busy_timeout_ms=READ_MS) as conn:
        after = conn.execute("SELECT available_after FROM work WHERE id = :id",
                             {"id": journal.task_work_id(task)}).fetchone()
        return after is None or after[0] <= store.now(conn)


def judge(seen: dict, directory: str, task: str, doubt: list[dict],
          at_cancel: dict | None, cancelled: bool = False) -> dict:
    """Count from the rows: effects twice and after the cancel, each split into
    the residual window (the key the frozen holder had in doubt) and breaks."""
    now = effects(directory)
    residual_keys = {d["operation_key"] for d in doubt}
    doubled = {kind: twice(keys) for kind, keys in now.items()}
    late, by_stamp = {}, False
    if cancelled and at_cancel == LOCKED:  # a service's file unreadable then:
        since = seen["cancelled_at_unix"]  # stamped later, committed later
        late = {kind: [k for k, at in rows if at > since]
                for kind, rows in stamped(directory).items()}
        by_stamp = True
    elif cancelled:
        late = {kind: now[kind][len(at_cancel[kind]):] for kind in now}
    found = [(kind, "twice", k) for kind, keys in doubled.items() for k in keys]
    found += [(kind, "after_cancel", k) for kind, keys in (late or {}).items()
              for k in keys]
    residual = [f for f in found if f[2] in residual_keys]
    breaks = [f for f in found if f[2] not in residual_keys]
    with opened(paths(directory)["journal"]) as conn:
        done = journal.holder(conn, task)
    seen.update(effects=now, twice=doubled, after_cancel=late,
                residual=[list(f) for f in residual], breaks=[list(f) for f in breaks],
                work_status=done and done["status"],
                after_cancel_by_stamp=by_stamp,
                holds=not breaks)
    return seen


def instants(trials: int, seed: int, span: float) -> list[float]:
    """The seeded draw: one instant per trial, uniform over [0, span)."""
    rng = random.Random(seed)
    return [rng.random() * span for _ in range(trials)]


def campaign(trials: int, seed: int, modes: tuple[str, ...],
             ttl: float = TTL_S, wait: float = WAIT_S, renames: int = RENAMES
             ) -> dict:
    """Measure the real worker's life (the longest of ``SPANS`` uninterrupted
    runs), draw the instants, and run each mode's trials at them: the real
    worker, then the control at the SAME instants. Leaves no folder."""
    folder = tempfile.mkdtemp(prefix="crashcourse-pauses-")
    try:
        template = os.path.join(folder, "template")
        guarded = os.path.join(folder, "guarded")  # the revoke mode's world
        os.makedirs(template)
        os.makedirs(guarded)
        task = build(template, pause_plan(renames))
        if build(guarded, pause_plan(renames), guarded=True) != task:
            raise AssertionError("one plan, one task id in both worlds")
        spans = measure_life(REAL, template, task, folder, ttl, wait)
        span = max(spans)
        drawn = instants(trials, seed, span)
        runs = {}
        for name, module in (("real", REAL), ("control", CONTROL)):
            results = [trial(n, mode, module,
                             guarded if mode == "revoke" else template, task,
                             os.path.join(folder, name), at, ttl, wait)
                       for mode in modes for n, at in enumerate(drawn, start=1)]
            runs[name] = {"worker": module, "results": results,
                          "summary": summarize(results, modes)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"seed": seed, "trials": trials, "modes": list(modes),
            "renames": renames, "ttl_s": ttl,
            "wait_s": wait, "uninterrupted_s": spans, "span_s": span,
            "instants_s": [round(x, 6) for x in drawn], **runs}


def summarize(results: list[dict], modes: tuple[str, ...]) -> dict:
    out = {}
    for mode in modes:
        mine = [r for r in results if r["mode"] == mode]
        out[mode] = {
            "trials": len(mine),
            "paused": sum(r["paused"] for r in mine),
            "held": sum(r["holds"] for r in mine),
            "breaks": sum(len(r["breaks"]) for r in mine),
            "trials_broken": [r["trial"] for r in mine if r["breaks"]],
            "residual": sum(len(r["residual"]) for r in mine),
            "trials_residual": [r["trial"] for r in mine if r["residual"]],
            "frozen_in_doubt": sum(bool(r.get("in_doubt_at_freeze")) for r in mine),
            "stop_blocked": sum(r.get("stop_blocked_s") is not None for r in mine),
            "third_run": sum(bool(r.get("third_run")) for r in mine),
            "journal_unreadable_at_freeze": sum(
                bool(r.get("journal_unreadable_at_freeze")) for r in mine),
            "after_cancel_by_stamp": sum(bool(r.get("after_cancel_by_stamp"))
                                         for r in mine),
        }
    return out


def load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def main(argv: list[str] | None = None, script: str | Path | None = None) -> int:
    """The command line: both workers at the same instants, one evidence file
    (its manifest names ``script``, the program that ran it: this module, or
    the bench that starts it). Exit 0 when the real worker never breaks and
    the control breaks at least once; 1 otherwise; 2 for bad usage or an
    existing ``--output``."""
    from crashcourse.lab import evidence

    parser = argument_parser("pause campaigns (issue 29)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--trials", default="12")
    parser.add_argument("--seed", default="2026")
    parser.add_argument("--mode", default="all",
                        help=f"all, or some of {', '.join(MODES)}, by commas")
    parser.add_argument("--ttl", default=str(TTL_S))
    parser.add_argument("--wait", default=str(WAIT_S))
    parser.add_argument("--renames", default=str(RENAMES))
    args = parser.parse_args(argv)
    try:
        trials = int(check_number("--trials", args.trials, 1, 1000))
        seed = int(check_number("--seed", args.seed, 0, 2**31))
        ttl = check_number("--ttl", args.ttl, 0.2, 30)
        wait = check_number("--wait", args.wait, 0.01, ttl, low_open=True)
        renames = int(check_number("--renames", args.renames, 1, 40))
        if wait >= ttl:
            raise ValueError("--wait must be below --ttl")
        modes = MODES if args.mode == "all" else tuple(args.mode.split(","))
        if not modes or not set(modes) <= set(MODES) or len(set(modes)) < len(modes):
            raise ValueError(f"--mode must be all or some of {MODES}, by commas")
    except ValueError as bad:
        print(f"pauses: {bad}", file=sys.stderr)
        return 2
    if evidence.refused_output(args.output):
        return 2
    before = load()
    done = campaign(trials, seed, modes, ttl, wait, renames)
    real, control = done["real"], done["control"]
    real_holds = all(m["breaks"] == 0 for m in real["summary"].values())
    control_caught = any(m["breaks"] > 0 for m in control["summary"].values())
    summary = {"real": real["summary"], "control": control["summary"],
               "real_holds": real_holds, "control_caught": control_caught,
               "span_s": done["span_s"], "seed": seed,
               "load_before": before, "load_after": load(), "cpus": os.cpu_count()}
    script = Path(script or __file__)
    evidence.record(args.output, "crashcourse.pause_campaign/1", script, summary,
                    [*real["results"], *control["results"]],
                    argv=[script.name, *(sys.argv[1:] if argv is None else argv)],
                    parameters={k: done[k] for k in ("seed", "trials", "modes",
                                                     "renames",
                                                     "ttl_s", "wait_s",
                                                     "uninterrupted_s", "span_s",
                                                     "instants_s")},
                    workers={"real": REAL, "control": CONTROL},
                    sources_used=evidence.sources_used(script))
    for name, run in (("real", real), ("control", control)):
        for mode, s in run["summary"].items():
            print(f"{name} {mode}: {s['held']}/{s['trials']} held, breaks"
                  f" {s['breaks']}, residual {s['residual']}", file=sys.stderr)
    return 0 if real_holds and control_caught else 1


if __name__ == "__main__":
    sys.exit(main())
