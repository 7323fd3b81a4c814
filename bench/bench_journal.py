"""The chapter 07 journal's resume against plan length, and the pieces
bench_dbos.py shares (the effect, the children, the syscall counts).

    python bench/bench_journal.py [--resume-trials 15] [--lengths 10 100 1000 10000]
                                  [--sides journal dbos]
    python bench/child.py journal --child steps|kill ... (a child; see child_argv)

THE EFFECT, the same on both sides of every comparison here and in
bench_dbos.py: each step INSERTs one row (its step number and the process id)
into ``effects.sqlite``, a WAL file that stands for the outside world, opened
in the SAME ``synchronous`` mode as the side's own store. The BARE EFFECT is
that INSERT alone, in a loop, in the same process, into a fresh file: a
step's OVERHEAD is its time minus the bare effect's. The journal's probe asks
the effects file whether the step's row is there.

THE JOURNAL RUNS AS THE RUNTIME RUNS IT: under a claim on its task
(``journal.claim_task``, a lease of ``--ttl``), each step admitted right
before its effect (``journal.admit``: one transaction that writes nothing),
the lease given back at the end (``fence.release``).

Measured here, all in one run, written to ``bench/results/journal_scaling.json``
(the full run to artifacts/bench/):

* resume: a worker is SIGKILLed inside step N-1 of a plan of N steps, N from
  ``--lengths``, for each side of ``--sides`` (``dbos`` needs DBOS installed:
  ``make bench`` runs in .venv-bench); the lengths and sides take turns,
  trial by trial, after one untimed round, and every figure is a median of
  ``--resume-trials``. A killed journal worker's lease must run out before a
  replacement may claim the task and probe its step: the parent waits it out
  (``journal.wait_out``) and only then spawns the replacement, so the time
  measured is the replacement's own, from its spawn to its first touch of a
  step (the journal's probe of the step in doubt; DBOS's re-run of it), split
  into the parts each child reports: start-up (interpreter, imports, opening
  its files, for DBOS its configuration and ``launch``) and recovery (the
  journal: claim, load the stored plan's head row, reach the first unfinished
  step; DBOS: from re-entering the workflow, replaying the recorded steps,
  to the step in flight). Also counted, from the effect rows: how often the
  in-flight step ran a second time.

The per-step costs, fsyncs and bytes per step (the journal beside DBOS) are
measured by bench_dbos.py, once: this file does not measure them again.
"""

from __future__ import annotations

# Only what a child (a resumed worker) needs is imported here: the parent's
# modules (argparse, tempfile, subprocess, statistics, pathlib...) are imported
# where the parent uses them, so a child's start-up is a worker's, not the bench's.
import json
import os
import sqlite3
import sys
import time
from types import SimpleNamespace

from crashcourse.validate import argument_parser

# A child's start, as near as its own code can tell: child.py stamps it first.
STARTED = float(os.environ.get("BENCH_STARTED") or time.time())
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results", "journal_scaling.json")
FIRST = "first_resumed_step"  # the time a resumed child first touched a step
PHASES = "resumed_phases.json"  # what a resumed child spent, and on what
WARM_UP = 1_000_000  # warm-up steps are numbered from here: other effect rows
MODES = ("NORMAL", "FULL")
# where a resumed journal child's time goes, spawn to first step, in order
RESUME_PARTS = {
    "journal": ("interpreter_ms", "imports_ms", "open_files_ms", "claim_ms",
                "load_plan_ms", "to_first_unfinished_ms"),
    "dbos": ("interpreter_ms", "imports_ms", "configure_ms", "launch_ms",
             "replay_ms"),
}
START_UP = {"journal": ("interpreter_ms", "imports_ms", "open_files_ms"),
            "dbos": ("interpreter_ms", "imports_ms", "configure_ms", "launch_ms")}
ROUNDS = 4  # a step run is this many plans (workflows), each beside bare effects
OWNER = "bench"
STEPS_TTL_S = 30.0  # a step run's lease: never close to running out
KILL_TTL_S = 1.0  # a killed run's lease, which the parent waits out
WAIT_S = 0.05  # each effect's declared wait (admit: it must fit in the lease)


# --- the shared pieces: the effect, the bare effect, the plan ----------------

def effects_db(directory: str, sync: str = "NORMAL",
               name: str = "effects") -> sqlite3.Connection:
    """The outside world's file, WAL, in ``sync`` mode (as the side's store)."""
    # DBOS may run a recovered step on another thread: allow that thread
    conn = sqlite3.connect(os.path.join(directory, f"{name}.sqlite"),
                           isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={sync}")
    conn.execute("CREATE TABLE IF NOT EXISTS effects (step INTEGER, pid INTEGER)")
    conn.execute("CREATE INDEX IF NOT EXISTS effects_by_step ON effects (step)")
    return conn


def effect(fx: sqlite3.Connection, step: int) -> None:
    """THE effect: one autocommitted row, keyed by step."""
    fx.execute("INSERT INTO effects VALUES (:i, :pid)", {"i": step, "pid": os.getpid()})


def effect_seen(fx: sqlite3.Connection, step: int) -> tuple[bool, dict]:
    """The journal's probe: is the step's row there?"""
    rows = fx.execute("SELECT count(*) FROM effects WHERE step = :i",
                      {"i": step}).fetchone()[0]
    return rows > 0, {"rows": rows}


def interleaved(n: int, runners: dict) -> dict:
    """``n`` steps of each runner (``runner(first, size)``: one plan, one
    workflow or one chunk of bare effects of ``size`` steps), in ROUNDS
    rounds; each round starts with the next runner in turn, so every runner
    meets the disk and the machine's load as the others do. Returns µs per
    step of each runner, ``<name>_us``, and the CPU time this process spent
    in it, ``<name>_cpu_us`` (what the machine's load does not change: the
    rest of a step's time is waiting, for a sync or for a core)."""
    size = max(1, n // ROUNDS)
    names = list(runners)
    spent = dict.fromkeys(names, 0.0)
    cpu = dict.fromkeys(names, 0.0)
    for r in range(ROUNDS):
        first = 1 + r * size
        for name in names[r % len(names):] + names[:r % len(names)]:
            start, used = time.perf_counter(), time.process_time()
            runners[name](first, size)
            spent[name] += time.perf_counter() - start
            cpu[name] += time.process_time() - used
    steps = size * ROUNDS
    return {**{f"{name}_us": spent[name] / steps * 1e6 for name in names},
            **{f"{name}_cpu_us": cpu[name] / steps * 1e6 for name in names}}


def bare_effects(directory: str, sync: str):
    """The bare effect's own fresh file, warmed up, as a runner."""
    fx = effects_db(directory, sync, name="bare")
    for i in range(WARM_UP, WARM_UP + 5):
        effect(fx, i)

    def bare(first: int, size: int) -> None:
        for i in range(first, first + size):
            effect(fx, i)

    return bare


PAGE = b"\x5a" * 4096  # one page, the unit a WAL commit appends
SYNCED_PAGES = 256  # the bare sync's file: this many pages, written before timing


def bare_fsyncs(directory: str, grow: bool = False):
    """One page written and synced, as a WAL commit in FULL ends, as a
    runner: the cost of one sync on this disk, in this run. By default the
    page OVERWRITES one of a file's ``SYNCED_PAGES`` pages, written and
    synced before the timing (the floor: the sync flushes data, no metadata);
    ``grow``: the page is APPENDED, so each sync also commits the file's new
    size, as a commit to a ``-wal`` that has not yet wrapped does."""
    name = "bare-append-fsync" if grow else "bare-fsync"
    fd = os.open(os.path.join(directory, name), os.O_RDWR | os.O_CREAT, 0o600)
    sync = getattr(os, "fdatasync", os.fsync)  # what SQLite calls on Linux
    if not grow:
        os.pwrite(fd, PAGE * SYNCED_PAGES, 0)
        sync(fd)
    end = [0]

    def synced(first: int, size: int) -> None:
        for i in range(first, first + size):
            if grow:
                os.pwrite(fd, PAGE, end[0])
                end[0] += len(PAGE)
            else:
                os.pwrite(fd, PAGE, (i % SYNCED_PAGES) * len(PAGE))
            sync(fd)

    synced(WARM_UP, 5)
    return synced


def note_first_step(directory: str) -> None:
    """In a resumed child: remember when it first touched a step (once)."""
    path = os.path.join(directory, FIRST)
    if os.environ.get("BENCH_RESUMED") and not os.path.exists(path):
        with open(path, "w") as out:
            out.write(repr(time.time()))


def touch_plan(n: int, first: int = 1, name: str = "bench"):
    from crashcourse.journal.plan import Step, make_plan

    return make_plan(name, [Step(number, "touch", {"i": first + number - 1})
                            for number in range(1, n + 1)])


def machine() -> dict:
    import platform

    return {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
            "platform": platform.platform(), "cpus": os.cpu_count(),
            "dbos": dbos_version(), "load_avg_1min": round(os.getloadavg()[0], 2)}


def load_now() -> list[float]:
    """The machine's load averages (1, 5, 15 min): other jobs on it."""
    return [round(x, 2) for x in os.getloadavg()]


def dbos_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("dbos")
    except Exception:
        return None


def median(values) -> float:
    import statistics

    return round(statistics.median(values), 1)


# --- the journal's child processes ------------------------------------------

class Stopwatch:
    """Time spent inside the calls it wraps, by name: what one part of a
    step costs, read inside the step rather than as the difference of two
    noisy totals."""

    def __init__(self):
        self.spent: dict[str, float] = {}

    def wrap(self, name: str, call):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.spent[name] = (self.spent.get(name, 0.0)
                                    + time.perf_counter() - start)
        return timed

    def per_step_us(self, steps: int) -> dict:
        return {f"{name}_us": total / steps * 1e6 for name, total in self.spent.items()}


def journal_actions(directory: str, fx: sqlite3.Connection, stop: int = 0,
                    watch: Stopwatch | None = None) -> dict:
    from crashcourse import journal
    from crashcourse.boundary import boundary

    def execute(step_args, operation_key):
        note_first_step(directory)
        effect(fx, step_args["i"])
        if step_args["i"] == stop:
            boundary("in-flight")
        return {}

    def probe(step_args, operation_key):
        note_first_step(directory)
        return effect_seen(fx, step_args["i"])

    if watch is not None:
        probe = watch.wrap("probe", probe)
    return {"touch": journal.Action(execute, probe, wait_s=WAIT_S)}


def run_claimed(conn, task: str, plan, actions: dict, ttl: float) -> dict:
    """The runtime's way: claim the task, run the plan under the claim, give
    the lease back (``journal.run_task``)."""
    from crashcourse import journal

    return journal.run_task(conn, task, plan, actions, owner=OWNER, ttl=ttl)


def journal_steps(args) -> dict:
    """The bare effect beside ``--n`` journal steps doing it (after a warm-up),
    in plans of n / ROUNDS steps, each saved, claimed, run and released inside
    its timed chunk (as DBOS creates its workflow inside its own); with
    ``--variants``, also one sync alone, and the time spent inside the probe
    and inside the admission (``journal.admit``: one transaction that writes
    nothing), per step; the journal's commits counted on request (never in a
    timed run)."""
    from collections import Counter

    from crashcourse import journal
    from crashcourse.journal.plan import save_plan
    from crashcourse.store import opened

    fx = effects_db(args.dir, args.sync)
    watch = Stopwatch() if args.variants else None
    actions = journal_actions(args.dir, fx, watch=watch)
    if watch is not None:
        journal.admit = watch.wrap("admission", journal.admit)
    with opened(os.path.join(args.dir, "journal.sqlite"),
                synchronous=args.sync) as conn:
        journal.install(conn)
        warm = touch_plan(5, WARM_UP, "warm")
        run_claimed(conn, save_plan(conn, warm), warm, actions, STEPS_TTL_S)
        size = max(1, args.n // ROUNDS)
        plans = {first: touch_plan(size, first, f"chunk{first}")
                 for first in range(1, size * ROUNDS + 1, size)}
        commits = Counter()
        if args.count_commits:  # the callback costs time: counting runs only
            conn.set_trace_callback(lambda sql: commits.update(
                ["statements", sql.split(None, 1)[0].upper()]))

        def steps(first: int, size: int) -> None:
            plan = plans[first]
            run_claimed(conn, save_plan(conn, plan), plan, actions, STEPS_TTL_S)

        runners = {"bare_effect": bare_effects(args.dir, args.sync), "steps": steps}
        if watch is not None:
            runners["bare_fsync"] = bare_fsyncs(args.dir)
            runners["bare_append_fsync"] = bare_fsyncs(args.dir, grow=True)
            watch.spent.clear()  # the warm-up's calls are not the steps'
        out = interleaved(args.n, runners)
    if watch is not None:
        out |= watch.per_step_us(size * ROUNDS)
    return {**out, "commits": commits["COMMIT"], "statements": commits["statements"]}


def journal_kill(args) -> None:
    """Claim the task and run (or, with BENCH_RESUMED set, resume) the stored
    plan; the first run is killed in step ``--stop``. A resumed run writes
    what it spent."""
    from crashcourse import journal
    from crashcourse.claims import fence
    from crashcourse.journal.plan import load_plan
    from crashcourse.store import opened

    imported = time.time()
    fx = effects_db(args.dir, args.sync)
    actions = journal_actions(args.dir, fx, args.stop)
    with opened(os.path.join(args.dir, "journal.sqlite"),
                synchronous=args.sync) as conn:
        start = time.time()
        claim = journal.claim_task(conn, args.task, OWNER, ttl=KILL_TTL_S)
        if claim is None:
            why = journal.why_not_claimed(conn, args.task)
            raise SystemExit(f"bench: task not claimed ({why})")
        claimed = time.time()
        plan = load_plan(conn, args.task)
        loaded = time.time()
        journal.run_plan(conn, args.task, plan, actions, claim)
        fence.release(conn, claim, done=True)
    if os.environ.get("BENCH_RESUMED"):
        with open(os.path.join(args.dir, FIRST)) as seen:
            first = float(seen.read())
        write_phases(args.dir, imports_ms=(imported - STARTED) * 1e3,
                     open_files_ms=(start - imported) * 1e3,
                     claim_ms=(claimed - start) * 1e3,
                     load_plan_ms=(loaded - claimed) * 1e3,
                     to_first_unfinished_ms=(first - loaded) * 1e3)


def write_phases(directory: str, **spent: float) -> None:
    """In a resumed child: where its time went, for the parent."""
    with open(os.path.join(directory, PHASES), "w") as out:
        out.write(json.dumps({"started_at": STARTED, **spent}))


def journal_child(args) -> None:
    if args.child == "steps":
        print(json.dumps(journal_steps(args)))
    elif args.child == "kill":
        journal_kill(args)
    else:
        raise SystemExit(f"no {args.child} child on the journal's side")


# --- the parent: trials -------------------------------------------------------

def prepare_journal(directory: str, n: int) -> str:
    from crashcourse import journal
    from crashcourse.journal.plan import save_plan
    from crashcourse.store import opened

    with opened(os.path.join(directory, "journal.sqlite")) as conn:
        journal.install(conn)
        return save_plan(conn, touch_plan(n))


def child_argv(side: str, mode: str, n: int, directory: str, *, stop: int = 0,
               task: str = "", sync: str = "NORMAL", extra=()) -> list[str]:
    # through child.py, so both sides start from bytecode, as a worker does
    return [os.path.join(HERE, "child.py"), side, "--child", mode, "--side", side,
            "--n", str(n), "--stop", str(stop), "--dir", directory, "--task", task,
            "--sync", sync, *extra]


def steps_trial(side: str, n: int, sync: str, extra=()) -> dict:
    """One child of ``side``: its runners (the bare effect, ``n`` steps...),
    in ``sync``."""
    import tempfile

    from crashcourse.lab.harness import Harness

    with tempfile.TemporaryDirectory() as d, Harness() as harness:
        done = harness.run(child_argv(side, "steps", n, d, sync=sync, extra=extra),
                           timeout=900)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-800:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_for_lease(directory: str, task: str) -> float:
    """The killed journal worker's lease, waited out (seconds waited)."""
    from crashcourse import journal
    from crashcourse.store import opened

    began = time.monotonic()
    with opened(os.path.join(directory, "journal.sqlite")) as conn:
        journal.wait_out(conn, task, timeout=60)
    return time.monotonic() - began


def resume_trial(side: str, n: int, stop: int, sync: str = "NORMAL") -> dict:
    """Spawn a child of ``side``, SIGKILL it in step ``stop``, wait out its
    lease (the journal's), spawn the replacement and time spawn -> first
    resumed step, with the parts the replacement reports."""
    import tempfile
    from pathlib import Path

    from crashcourse.lab.harness import Harness

    with tempfile.TemporaryDirectory() as d, Harness() as harness:
        task = prepare_journal(d, n) if side == "journal" else "wf-bench"
        argv = child_argv(side, "kill", n, d, stop=stop, task=task, sync=sync)
        worker = harness.start(argv, stop_at="in-flight")
        worker.wait_for_boundary(timeout=900)
        worker.kill()
        waited = wait_for_lease(d, task) if side == "journal" else 0.0
        harness.env["BENCH_RESUMED"] = "1"
        cpu, spawned = children_cpu_ms(), time.time()
        done = harness.run(argv, timeout=900)
        cpu = children_cpu_ms() - cpu  # the replacement's, reaped by run()
        del harness.env["BENCH_RESUMED"]
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-800:])
        first = float(Path(d, FIRST).read_text())
        fx = effects_db(d)
        runs = fx.execute("SELECT count(*) FROM effects WHERE step = :s",
                          {"s": stop}).fetchone()[0]
        fx.close()
        phases = Path(d, PHASES)
        spent = json.loads(phases.read_text()) if phases.exists() else {}
    if "started_at" in spent:  # from the spawn to the child's first line
        spent["interpreter_ms"] = (spent.pop("started_at") - spawned) * 1e3
    return {"spawn_to_first_resumed_s": first - spawned, "rerun": int(runs > 1),
            "replacement_cpu_ms": cpu, "lease_waited_s": waited, **spent}


def children_cpu_ms() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def extra_steps(short: int, long: int) -> int:
    """How many more steps a run of ``long`` makes than one of ``short``."""
    return (long // ROUNDS - short // ROUNDS) * ROUNDS


def syscalls_per_step(side: str, short: int = 48, long: int = 248) -> dict:
    """Per step in WAL+FULL, by file, from strace: fsync + fdatasync calls,
    and bytes written (pwrite64/write return values); a run of ``long`` steps
    minus a run of ``short``, per extra step, so start-up and install cancel.
    The bare effect's and the bare sync's own files are left out."""
    import re
    import shutil
    import subprocess
    import tempfile
    from collections import Counter
    from pathlib import Path

    strace = shutil.which("strace")
    if strace is None:
        return {"error": "strace is not installed"}
    syncs, written, calls, grown = [], [], Counter(), []
    for n in (short, long):
        with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as log:
            out = os.path.join(log, "strace.txt")
            done = subprocess.run(
                [strace, "-f", "-qq", "-y", "-e",
                 "trace=fsync,fdatasync,pwrite64,write", "-o", out,
                 sys.executable, *child_argv(side, "steps", n, d, sync="FULL")],
                capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                return {"error": f"strace exit {done.returncode}: {done.stderr[-300:]}"}
            text = Path(out).read_text()
        mine = re.escape(d)
        found_syncs, found_bytes, found_grown = Counter(), Counter(), Counter()
        ends, synced_end = Counter(), Counter()  # per file: written up to, synced
        pattern = (r"(fsync|fdatasync|pwrite64|write)\(\d+<(" + mine
                   + r"/[^>]*)>(.*)= (\d+)")
        for call, path, rest, result in re.findall(pattern, text):
            name = os.path.relpath(path, d)
            if name.startswith("bare"):  # the bare loops run n times in both runs
                continue
            if call in ("fsync", "fdatasync"):
                found_syncs[name] += 1
                calls[call] += 1
                # a sync after the file grew also commits its size (metadata)
                found_grown[name] += ends[name] > synced_end[name]
                synced_end[name] = ends[name]
            else:
                found_bytes[name] += int(result)
                offset = re.search(r", (\d+)\)\s*$", rest)
                if call == "pwrite64" and offset:
                    ends[name] = max(ends[name], int(offset[1]) + int(result))
        syncs.append(found_syncs)
        written.append(found_bytes)
        grown.append(found_grown)
    extra = extra_steps(short, long)

    def per_step(counted: list) -> dict:
        names = sorted(set(counted[0]) | set(counted[1]))
        return {k: v for k in names
                if (v := round((counted[1][k] - counted[0][k]) / extra, 3))}

    return {"syncs_per_file": per_step(syncs), "bytes_per_file": per_step(written),
            "syncs_growing_the_file": per_step(grown),
            "sync_calls": dict(calls), "steps": [short, long]}


def statements_per_step(short: int = 48, long: int = 248) -> dict:
    """The SQL statements and COMMITs the journal's connection runs per step
    in WAL+FULL (SQLite's trace callback), the same two runs' difference as
    ``syscalls_per_step``."""
    import tempfile

    counted = []
    for n in (short, long):
        with tempfile.TemporaryDirectory() as d:
            counted.append(journal_steps(SimpleNamespace(
                dir=d, n=n, sync="FULL", count_commits=True, variants=False)))
    extra = extra_steps(short, long)
    return {name: round((counted[1][name] - counted[0][name]) / extra, 3)
            for name in ("statements", "commits")}


def resume_scaling(lengths: list[int], trials: int, sides: list[str]) -> dict:
    """Resume after a kill in step N-1, for each plan length N and side. The
    lengths and sides take turns, trial by trial (after one untimed round),
    so a load that comes and goes on the machine falls on all of them."""
    pairs = [(side, n) for n in lengths for side in sides]
    for side, n in pairs:  # warm-up: bytecode and page cache as in any later trial
        resume_trial(side, n, stop=n - 1)
    found = {pair: [] for pair in pairs}
    for trial in range(trials):
        for side, n in pairs if trial % 2 == 0 else pairs[::-1]:
            found[side, n].append(resume_trial(side, n, stop=n - 1))
        print(f"[{trial + 1}/{trials}] resume trials, load {load_now()}",
              file=sys.stderr)
    by_side = {side: {} for side in sides}
    for (side, n), runs in found.items():
        point = {"spawn_to_first_resumed_step_ms": median(
                     1e3 * r["spawn_to_first_resumed_s"] for r in runs),
                 **{part: median(r[part] for r in runs)
                    for part in RESUME_PARTS[side if side == "journal" else "dbos"]},
                 "replacement_cpu_ms": median(r["replacement_cpu_ms"] for r in runs),
                 "lease_waited_s": median(r["lease_waited_s"] for r in runs),
                 "in_flight_step_rerun": sum(r["rerun"] for r in runs),
                 "kills": len(runs)}
        kind = "journal" if side == "journal" else "dbos"
        point["start_up_ms"] = round(sum(point[p] for p in START_UP[kind]), 1)
        point["recovery_ms"] = round(sum(point[p] for p in RESUME_PARTS[kind]
                                         if p not in START_UP[kind]), 1)
        by_side[side][str(n)] = point
        print(f"resume, {side}, {n} steps: {point}", file=sys.stderr)
    out = {"lengths": lengths, "trials": trials, "by_side": by_side}
    short, long = str(min(lengths)), str(max(lengths))
    key = "spawn_to_first_resumed_step_ms"
    for side in sides:
        points = by_side[side]
        out[side] = {
            "ratio_longest_to_shortest": round(points[long][key] / points[short][key],
                                               3),
            # CPU time waits for no one: a reading the machine's load moves less
            "cpu_ratio_longest_to_shortest": round(
                points[long]["replacement_cpu_ms"]
                / points[short]["replacement_cpu_ms"], 3)}
    out["target_ratio"] = 1.25  # the journal's, longest plan over shortest
    out["target_met"] = out["journal"]["ratio_longest_to_shortest"] <= 1.25
    return out


CHILD_OPTIONS = {"--child": str, "--side": str, "--n": int, "--stop": int,
                 "--dir": str, "--task": str, "--sync": str}


def child_args(argv: list[str]) -> SimpleNamespace:
    """A child's options, as ``child_argv`` writes them, read without argparse
    (whose import and formatter cost a child milliseconds a worker never pays);
    ``child_parser`` takes the same options, for bench_dbos.py's children."""
    values = {"side": "journal", "n": 0, "stop": 0, "dir": "", "task": "",
              "sync": "NORMAL", "count_commits": False, "variants": False}
    words = list(argv)
    while words:
        flag = words.pop(0)
        if flag in ("--count-commits", "--variants"):
            values[flag[2:].replace("-", "_")] = True
        elif flag in CHILD_OPTIONS and words:
            values[flag[2:]] = CHILD_OPTIONS[flag](words.pop(0))
        else:
            raise SystemExit(f"bench child: cannot read {flag!r} in {argv}")
    if values.get("child") not in ("kill", "steps", "same-id") or \
            values["sync"] not in MODES:
        raise SystemExit(f"bench child: bad --child or --sync in {argv}")
    return SimpleNamespace(**values)


def child_parser():

    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--child", choices=("kill", "steps", "same-id"))
    parser.add_argument("--side", default="journal")
    for name in ("--n", "--stop"):
        parser.add_argument(name, type=int, default=0)
    for name in ("--dir", "--task"):
        parser.add_argument(name, default="")
    parser.add_argument("--sync", default="NORMAL", choices=MODES)
    parser.add_argument("--count-commits", action="store_true")
    parser.add_argument("--variants", action="store_true")
    return parser


def main(argv=None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if "--child" in words:
        journal_child(child_args(words))
        return 0

    parser = argument_parser(__doc__.split("\n\n")[0])
    # a resume is ~40 ms of which the plan's length moves ~2: medians of many
    # trials, or the start-up's noise decides the ratio
    parser.add_argument("--resume-trials", type=int, default=15)
    parser.add_argument("--lengths", type=int, nargs="+",
                        default=[10, 100, 1000, 10_000])
    parser.add_argument("--sides", nargs="+", choices=("journal", "dbos"),
                        default=["journal", "dbos"] if dbos_version() else ["journal"])
    args = parser.parse_args(words)
    load_before = load_now()
    results = {"resume": resume_scaling(sorted(args.lengths), args.resume_trials,
                                        args.sides)}
    document = {"measured_on": time.strftime("%Y-%m-%d"),
                "machine": {**machine(), "load_avg_at_start": load_before,
                            "load_avg_at_end": load_now()},
                "parameters": {"resume_trials": args.resume_trials,
                               "lengths": sorted(args.lengths), "sides": args.sides,
                               "kill_ttl_s": KILL_TTL_S, "wait_s": WAIT_S},
                "results": results}
    from pathlib import Path

    from crashcourse.lab.evidence import new_run_path, write_exclusive

    root, summary = Path(HERE).parent, Path(RESULTS)
    (root / "artifacts" / "bench").mkdir(parents=True, exist_ok=True)
    out = write_exclusive(new_run_path(root / "artifacts" / "bench", "journal"),
                          document)
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n",
                       encoding="utf-8")
    print(json.dumps(results, indent=2))
    print(f"run {out}; summary {summary.relative_to(root)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
