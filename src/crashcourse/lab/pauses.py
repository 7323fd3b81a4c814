"""Pause campaigns: SIGSTOP a real worker at any instant of its life (issue 29).

    python -m crashcourse.lab.pauses --output FILE [--trials N] [--forced N]
        [--seed S] [--mode all|takeover,cancel,revoke] [--ttl S] [--wait S]
        [--renames N]

The book's mechanisms were shown against a worker killed or frozen at a NAMED
boundary. Here chapter 07's journal worker (``crashcourse.workers.
journal_worker``, the real process) is frozen with SIGSTOP at an instant drawn
uniformly over its measured life: inside a journal transaction, inside a
service's, between its admission and the service's commit, or starting up.
The life is measured per configuration (the worker and the world it runs
in: ``SPANS`` uninterrupted runs, the longest), each trial draws fractions
of it from its own seeded stream (``fractions``: the real worker and the
control draw the same ones), and a draw counts only when the kernel showed
the worker stopped, alive (``/proc``, ``lab.processes``): a draw that fell
after the run's end is recorded as missed and the next one runs in a fresh
world. Each trial records where the freeze landed (``where_frozen``: its
phase from the journal's rows, the effects already in the services' rows,
whose write lock it held). ``--forced N`` trials freeze it instead at one
forced instant, the first mail's admission (``forced_at``: checked, not
yet sent), held there by its boundary and then SIGSTOPped. While it is
frozen:

- its lease runs out because the experiment WAITS for it (the store's clock,
  a bounded wait; nothing rewrites ``expires``);
- ``takeover`` (chapter 07): a replacement process claims the task and
  resumes it; once its claim is in the work row (at the forced instant: once
  it ended, a fixed order) the frozen one is thawed and both run to their end;
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

Every campaign runs the same draws and the forced instant against the
negative control (``crashcourse.workers.unfenced_journal_worker``, the
worker with its fence taken out): its thawed holder is never refused. At a
drawn instant it is caught by chance (when it was frozen with mails left);
at the forced instant of a cancel it is caught every time, where the real
worker sends the one admitted mail and nothing after it. The command exits
0 only when the real worker never breaks, every drawn trial froze a live
worker, the control breaks at least once and at every forced cancel.
"""

from __future__ import annotations

import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crashcourse import claims, journal, store
from crashcourse.boundary import CONTROL_FD_ENV, MARKER_FD_ENV, STOP_AT_ENV
from crashcourse.journal.plan import Plan, Step, order_plan, save_plan
from crashcourse.lab import processes
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
SPANS = 3  # uninterrupted runs measured per configuration; the life is the
# longest, so a draw covers all of it (one that lands after the run's end is
# redrawn, never counted as a pause)
MAX_DRAWS = 24  # draws per trial before it is recorded as never frozen: on a
# loaded machine one run's life is half another's, and a draw over the longest
# misses the shorter ones' ends
FORCED = 3  # trials per mode frozen at the forced instant (``forced_at``)
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
    """A copy of ``template``'s world in ``directory``. A guarded service
    keeps its broker's absolute path: the copies are guarded again by the
    COPY's broker, or every credential the copy issues is unknown to the
    template's (what the revoke mode measured before: every run refused at
    its first effect)."""
    os.makedirs(directory, exist_ok=True)
    for name, path in paths(template).items():
        if os.path.exists(path):  # the broker only in a guarded world
            shutil.copyfile(path, paths(directory)[name])
    own = paths(directory)
    if os.path.exists(own["broker"]):
        for service in ("drive", "mail"):
            with opened(own[service], record=True) as conn:
                broker.guard(conn, own["broker"])


class Process:
    """A worker started in its own process group; only it is ever signalled.
    With ``stop_at`` it holds at that boundary (``crashcourse.boundary``)
    until ``release``: the forced instant."""

    def __init__(self, module: str, directory: str, task: str, owner: str,
                 ttl: float, wait: float, stop_at: str | None = None):
        args = [sys.executable, "-S", "-m", module, "--dir", directory, "--task",
                task, "--ttl", str(ttl), "--wait", str(wait), "--owner", owner]
        if os.path.exists(paths(directory)["broker"]):  # it asks for a credential
            args += ["--broker", paths(directory)["broker"]]
        env = {**os.environ, "PYTHONPATH": SRC}
        passed: tuple[int, ...] = ()
        self.marker = self.control = None
        if stop_at is not None:  # the harness's two pipes (lab.harness)
            self.marker, marker_w = os.pipe()
            control_r, self.control = os.pipe()
            env.update({STOP_AT_ENV: stop_at, MARKER_FD_ENV: str(marker_w),
                        CONTROL_FD_ENV: str(control_r)})
            passed = (marker_w, control_r)
        self.stop_at = stop_at
        self.log = open(os.path.join(directory, f"{owner}.log"), "wb")  # noqa: SIM115
        self.started = time.monotonic()
        self.popen = subprocess.Popen(args, stdout=self.log, stderr=self.log,
                                      env=env, start_new_session=True,
                                      pass_fds=passed)
        for fd in passed:  # the child's ends
            os.close(fd)
        self.frozen = False

    def since_start(self) -> float:
        return round(time.monotonic() - self.started, 4)

    def signal(self, number: int) -> bool:
        """Signal the group; False when it is gone (ended and reaped)."""
        if self.popen.poll() is not None:
            return False
        try:
            os.killpg(self.popen.pid, number)
        except ProcessLookupError:
            return False
        return True

    def freeze(self) -> dict:
        """SIGSTOP, then wait (bounded) until the kernel shows the process
        stopped, or gone: a signal is delivered, not done (``lab.processes``).
        What was measured: ``alive`` (it showed T: frozen while it ran), the
        kernel's state, when the signal left and when the stop was seen."""
        signalled = self.since_start()
        sent = self.signal(signal.SIGSTOP)

        def settled() -> bool:
            return processes.state(self.popen.pid) in (*processes.STOPPED, "Z", None)

        if sent:
            wait_until(settled, RUN_TIMEOUT_S, interval=processes.POLL,
                       what="the signalled worker stopped, or ended")
        state = processes.state(self.popen.pid) if sent else None
        self.frozen = state in processes.STOPPED
        return {"alive": self.frozen, "kernel_state": state,
                "signalled_s": signalled, "stopped_seen_s": self.since_start()}

    def wait_marker(self, timeout: float = RUN_TIMEOUT_S) -> bool:
        """Block (bounded) until it announces its ``stop_at`` boundary; False
        when it ended or overran without reaching it."""
        ready, _, _ = select.select([self.marker], [], [], timeout)
        line = os.read(self.marker, 256).decode() if ready else ""
        return line.strip() == self.stop_at

    def thaw(self) -> None:
        """SIGCONT; a worker held at its boundary is released too."""
        self.signal(signal.SIGCONT)
        self.frozen = False
        if self.control is not None:
            try:
                os.write(self.control, b"go\n")
            except BrokenPipeError:  # it ended: nothing holds
                pass

    def wait(self, timeout: float = RUN_TIMEOUT_S) -> int | None:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def end(self) -> None:
        """Leave nothing behind: thaw (nothing is left stopped, whatever
        happens next), kill the group, reap, close the pipes."""
        if self.popen.poll() is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGKILL)
            self.popen.wait(timeout=10)
        self.log.close()
        for fd in (self.marker, self.control):
            if fd is not None:
                os.close(fd)
        self.marker = self.control = None


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
    """``SPANS`` uninterrupted runs of ``module`` in ``template``'s world (one
    configuration: the worker and the world it runs in), start to exit, s."""
    spans = []
    for n in range(SPANS):
        directory = os.path.join(folder, f"span-{n}")
        copy_world(template, directory)
        worker = Process(module, directory, task, "holder-a", ttl, wait)
        try:
            if worker.wait() is None:
                raise TimeoutError(f"an uninterrupted run took over {RUN_TIMEOUT_S} s")
            spans.append(worker.since_start())
        finally:
            worker.end()
    return spans


def write_locked(path: str) -> bool:
    """Whether another process holds ``path``'s write lock now: a BEGIN
    IMMEDIATE that waits 1 ms, rolled back at once (it writes nothing)."""
    from sqlite3 import OperationalError

    try:
        with opened(path, busy_timeout_ms=1) as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
    except OperationalError as locked:
        if not held_out(locked):
            raise
        return True
    return False


def where_frozen(directory: str, task: str) -> dict:
    """Where a frozen holder is, measured while it is frozen: the work row,
    its steps in doubt, the effects already in the services' rows, whose
    write lock it holds (inside that file's transaction), and the ``phase``
    those say: ``opening`` (its journal unreadable: frozen in its first
    open), ``before_claim``, ``in_doubt`` (an intent of its generation and no
    outcome: before, at or after its admission, or inside the service's
    call), ``between_steps`` (claimed, nothing in doubt) or ``after_work``
    (its work row no longer RUNNING: frozen on its way out)."""
    row = while_frozen(holder, directory, task)
    doubt = while_frozen(in_doubt, directory, task)
    locks = sorted(name for name, path in paths(directory).items()
                   if os.path.exists(path) and write_locked(path))
    landed = while_frozen(effects, directory)
    found = {"locks_held": locks,
             "effects_at_freeze": landed if landed == LOCKED else
             {kind: len(keys) for kind, keys in landed.items()}}
    if row == LOCKED or doubt == LOCKED:  # frozen in the journal's first open
        return {**found, "phase": "opening", "journal_unreadable_at_freeze": True,
                "holder_at_freeze": None, "in_doubt_at_freeze": []}
    doubt = [d for d in doubt if row and d["generation"] == row["generation"]]
    if row is None or not row["generation"]:
        phase = "before_claim"
    elif row["status"] != claims.RUNNING:
        phase = "after_work"
    else:
        phase = "in_doubt" if doubt else "between_steps"
    return {**found, "phase": phase,
            "holder_at_freeze": row and {k: row[k] for k in ("status", "generation")},
            "in_doubt_at_freeze": doubt}


def freeze_at_instant(a: Process, instant: float) -> dict:
    """SIGSTOP ``a`` ``instant`` s after its start; what the kernel said:
    ``landed`` only when it showed the process stopped (alive, frozen), never
    assumed. A process that ended first (before the instant, or between it
    and the signal) did not land: its exit is what was measured."""
    if a.wait(timeout=instant) is not None:  # it ended before the instant
        return {"landed": False, "ended_by_s": a.since_start(),
                "why": "ended before the instant"}
    froze = a.freeze()
    if not froze["alive"]:
        return {"landed": False, **froze, "why": "ended before the stop took"}
    return {"landed": True, **froze}


def freeze_at_boundary(a: Process) -> dict:
    """The forced instant: ``a`` holds at its ``stop_at`` boundary (checked,
    not yet sent), then is SIGSTOPped there."""
    if not a.wait_marker():
        return {"landed": False, "ended_by_s": a.since_start(),
                "why": f"never reached {a.stop_at}"}
    return {"landed": a.freeze()["alive"], "boundary": a.stop_at,
            "stopped_seen_s": a.since_start()}


def trial(number: int, mode: str, module: str, template: str, task: str,
          folder: str, fractions: random.Random | None, life: float,
          ttl: float, wait: float, stop_at: str | None = None) -> dict:
    """One pause of ``holder-a``: at an instant drawn from ``fractions`` (a
    fraction of ``life``, the configuration's measured life), or with
    ``stop_at`` at that boundary (the forced instant). A draw that did not
    land (the kernel never showed the worker stopped) is recorded and the
    next one is run in a fresh world, up to ``MAX_DRAWS``: the trial's
    instant is uniform over the life of the run it froze, and every trial
    judged as frozen was measured frozen. Then: its lease waited out, the
    mode's act, thawed, both ended, the rows judged."""
    seen: dict = {"worker": module, "trial": number, "mode": mode,
                  "life_s": life, "forced": stop_at, "draws": []}
    for k in range(1 if stop_at else MAX_DRAWS):
        directory = os.path.join(folder, f"{mode}-{number}-{k}")
        copy_world(template, directory)
        a = Process(module, directory, task, "holder-a", ttl, wait, stop_at)
        try:
            if stop_at:
                froze = freeze_at_boundary(a)
            else:
                fraction = fractions.random()
                froze = {"fraction": round(fraction, 6),
                         "planned_s": round(fraction * life, 4),
                         **freeze_at_instant(a, fraction * life)}
            seen["draws"].append(froze)
            if froze["landed"]:
                return frozen_trial(seen, a, directory, task, mode, module, froze,
                                    ttl, wait)
        finally:
            a.end()
    seen.update(paused=False, planned_s=seen["draws"][-1].get("planned_s"),
                at_s=seen["draws"][-1].get("ended_by_s"))
    return judge(seen, os.path.join(folder, f"{mode}-{number}-{k}"), task, [], None)


def frozen_trial(seen: dict, a: Process, directory: str, task: str, mode: str,
                 module: str, froze: dict, ttl: float, wait: float) -> dict:
    """``a`` is frozen (the kernel said so): what the rows say now, its
    lease waited out, the mode's act (a replacement; a person's cancel or
    revocation, then a replacement), thawed, every process ended."""
    started: list[Process] = []
    seen.update(paused=True, planned_s=froze.get("planned_s"),
                at_s=froze["stopped_seen_s"], **where_frozen(directory, task))
    row, doubt = seen["holder_at_freeze"], seen["in_doubt_at_freeze"]
    try:
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
        if seen["forced"]:  # the replacement ends first: a fixed order
            if b.wait() is None:
                raise TimeoutError(f"the replacement ran past {RUN_TIMEOUT_S} s")
        elif mode == "takeover":  # the replacement's claim, or its end, then thaw
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


def fractions(seed: int, mode: str, number: int) -> random.Random:
    """Trial ``number``'s own seeded stream of fractions of the life, uniform
    over [0, 1): the real worker and the control draw the same ones."""
    return random.Random(f"{seed}:{mode}:{number}")


def forced_at(plan: Plan) -> str:
    """The forced instant: the first mail's admission (``step-N:admitted``),
    checked and not yet sent, with mails left after it: a holder thawed
    there sends this one (the residual window), and only a holder without
    its fence sends the ones after it."""
    first = next(s.number for s in plan.steps if s.action == "send_mail")
    return f"step-{first}:{journal.ADMITTED}"


def campaign(trials: int, seed: int, modes: tuple[str, ...],
             ttl: float = TTL_S, wait: float = WAIT_S, renames: int = RENAMES,
             forced: int = FORCED) -> dict:
    """Measure each configuration's life (each worker in each world, the
    longest of ``SPANS`` uninterrupted runs), and run each mode's trials:
    the real worker, then the control, each at the same seeded fractions of
    its own life, then ``forced`` trials each at the forced instant. Leaves
    no folder."""
    folder = tempfile.mkdtemp(prefix="crashcourse-pauses-")
    plan = pause_plan(renames)
    try:
        worlds = {"plain": os.path.join(folder, "template"),
                  "guarded": os.path.join(folder, "guarded")}  # revoke's world
        for template in worlds.values():
            os.makedirs(template)
        task = build(worlds["plain"], plan)
        if build(worlds["guarded"], plan, guarded=True) != task:
            raise AssertionError("one plan, one task id in both worlds")
        needed = sorted({world_of(mode) for mode in modes})
        runs, lives = {}, {}
        for name, module in (("real", REAL), ("control", CONTROL)):
            lives[name] = {world: measure_life(module, worlds[world], task,
                                               os.path.join(folder, f"{name}-{world}"),
                                               ttl, wait) for world in needed}
            results = []
            for mode in modes:
                world = world_of(mode)
                template, life = worlds[world], max(lives[name][world])
                where = os.path.join(folder, name)
                results += [trial(n, mode, module, template, task, where,
                                  fractions(seed, mode, n), life, ttl, wait)
                            for n in range(1, trials + 1)]
                results += [trial(trials + n, mode, module, template, task, where,
                                  None, life, ttl, wait, stop_at=forced_at(plan))
                            for n in range(1, forced + 1)]
            runs[name] = {"worker": module, "results": results,
                          "summary": summarize(results, modes)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"seed": seed, "trials": trials, "forced": forced, "modes": list(modes),
            "renames": renames, "ttl_s": ttl, "wait_s": wait,
            "forced_at": forced_at(plan), "uninterrupted_s": lives, **runs}


def world_of(mode: str) -> str:
    return "guarded" if mode == "revoke" else "plain"


def summarize(results: list[dict], modes: tuple[str, ...]) -> dict:
    """Per mode, the drawn trials and the forced ones apart. ``drawn``
    counts every instant drawn, ``landed`` those the kernel showed frozen
    (alive), ``missed`` those after the run's end (redrawn); ``phases``
    where the landed ones froze it."""
    out = {}
    for mode in modes:
        mine = [r for r in results if r["mode"] == mode]
        drawn = [r for r in mine if not r["forced"]]
        draws = [d for r in drawn for d in r["draws"]]
        out[mode] = {
            **counts(drawn),
            "drawn": len(draws),
            "landed": sum(d["landed"] for d in draws),
            "missed": sum(not d["landed"] for d in draws),
            "never_landed": [r["trial"] for r in drawn if not r["paused"]],
            "phases": phases(drawn),
            "inside_a_lock": sum(bool(r.get("locks_held")) for r in drawn),
            "forced": counts([r for r in mine if r["forced"]]),
        }
    return out


def phases(results: list[dict]) -> dict[str, int]:
    found: dict[str, int] = {}
    for r in results:
        if r["paused"]:
            found[r["phase"]] = found.get(r["phase"], 0) + 1
    return dict(sorted(found.items()))


def counts(mine: list[dict]) -> dict:
    return {
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


def load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def main(argv: list[str] | None = None, script: str | Path | None = None) -> int:
    """The command line: both workers at the same fractions of their lives
    and at the forced instant, one evidence file (its manifest names
    ``script``, the program that ran it: this module, or the bench that
    starts it). Exit 0 when the real worker never breaks, every drawn trial
    froze a live worker, and the control breaks at least once and at every
    forced trial of the modes where only the fence stops it (``FENCED``);
    1 otherwise; 2 for bad usage or an existing ``--output``."""
    from crashcourse.lab import evidence

    parser = argument_parser("pause campaigns (issue 29)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--trials", default="12")
    parser.add_argument("--forced", default=str(FORCED))
    parser.add_argument("--seed", default="2026")
    parser.add_argument("--mode", default="all",
                        help=f"all, or some of {', '.join(MODES)}, by commas")
    parser.add_argument("--ttl", default=str(TTL_S))
    parser.add_argument("--wait", default=str(WAIT_S))
    parser.add_argument("--renames", default=str(RENAMES))
    args = parser.parse_args(argv)
    try:
        trials = int(check_number("--trials", args.trials, 1, 1000))
        forced = int(check_number("--forced", args.forced, 0, 100))
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
    done = campaign(trials, seed, modes, ttl, wait, renames, forced)
    real, control = done["real"], done["control"]
    summary = {"real": real["summary"], "control": control["summary"],
               **verdict(real["summary"], control["summary"]),
               "forced_at": done["forced_at"], "seed": seed,
               "load_before": before, "load_after": load(), "cpus": os.cpu_count()}
    script = Path(script or __file__)
    evidence.record(args.output, "crashcourse.pause_campaign/2", script, summary,
                    [*real["results"], *control["results"]],
                    argv=[script.name, *(sys.argv[1:] if argv is None else argv)],
                    parameters={k: done[k] for k in ("seed", "trials", "forced",
                                                     "modes", "renames",
                                                     "ttl_s", "wait_s",
                                                     "forced_at",
                                                     "uninterrupted_s")},
                    workers={"real": REAL, "control": CONTROL},
                    sources_used=evidence.sources_used(script))
    for name, run in (("real", real), ("control", control)):
        for mode, s in run["summary"].items():
            f = s["forced"]
            print(f"{name} {mode}: {s['held']}/{s['trials']} held, breaks"
                  f" {s['breaks']}, residual {s['residual']}, landed"
                  f" {s['landed']}/{s['drawn']} draws; forced {f['held']}/"
                  f"{f['trials']} held, breaks {f['breaks']}", file=sys.stderr)
    ok = summary["real_holds"] and summary["every_trial_froze"]
    return 0 if ok and summary["control_caught"] and summary[
        "control_caught_at_every_forced"] else 1


FENCED = ("cancel",)  # where only the fence stops a thawed holder at the forced
# instant. Under revocation the guarded services refuse the control's
# credential too; in a takeover the replacement has ended first, and the
# control's own probe before each intent finds every later mail sent (and
# the journal's key refuses a second intent): neither is the fence.


def verdict(real: dict, control: dict) -> dict:
    """The campaign's four claims, each from the summaries' counts."""
    everyone = [*real.values(), *control.values()]
    forced = [m["forced"] for mode, m in control.items() if mode in FENCED]
    return {
        "real_holds": all(m["breaks"] == 0 and m["forced"]["breaks"] == 0
                          for m in real.values()),
        "every_trial_froze": all(not m["never_landed"] for m in everyone),
        "control_caught": any(m["breaks"] > 0 or m["forced"]["breaks"] > 0
                              for m in control.values()),
        "control_caught_at_every_forced": all(
            len(f["trials_broken"]) == f["trials"] for f in forced),
    }


if __name__ == "__main__":
    sys.exit(main())
