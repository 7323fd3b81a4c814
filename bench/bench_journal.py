"""The chapter 07 journal measured alone, and the pieces bench_dbos.py shares.

    python bench/bench_journal.py [--trials 5] [--steps 400] [--resume-trials 15]
                                  [--lengths 10 100 1000 10000]
    python bench/bench_journal.py --child steps|kill|same-id --n N --dir D ...

THE EFFECT, the same on both sides of every comparison here and in
bench_dbos.py: each step INSERTs one row (its step number and the process id)
into ``effects.sqlite``, a WAL file that stands for the outside world, opened
in the SAME ``synchronous`` mode as the side's own store. The BARE EFFECT is
that INSERT alone, in a loop, in the same process, into a fresh file: a
step's OVERHEAD is its time minus the bare effect's. The journal's probe asks
the effects file whether the step's row is there.

Measured (medians of ``--trials`` runs, ``--resume-trials`` for the resume,
all in one run), written to
``bench/results/journal_scaling.json`` (the full run to artifacts/bench/):

* resume: a worker is SIGKILLed inside step N-1 of a plan of N steps, N from
  ``--lengths`` (the lengths take turns, trial by trial); the time from
  spawning its replacement to the replacement's first touch of a step (its
  probe of the step in doubt). The replacement also reports how long loading
  the stored plan took (its head row: the steps are rows, read when asked)
  and how long ``run_plan`` took to reach the first unfinished step (which
  includes reading the rows from there on); and the replacement's CPU time
  (its whole run), a second reading that a busy machine moves less than wall
  time. The child imports only what a worker would: its start-up is not
  padded with the bench's own modules.
* fsyncs per step in WAL+FULL. Counted two ways. (1) strace, when the machine
  has it: every fsync/fdatasync a child makes, by file, for runs of two
  lengths; the difference divided by the difference in steps, so start-up and
  install cancel. (2) The journal's COMMITs per step, counted by SQLite's
  trace callback (in WAL mode with synchronous=FULL, SQLite syncs the WAL
  once per committed write transaction, plus its checkpoints).
* per-step cost, bare effect and overhead, WAL+NORMAL and WAL+FULL.
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

STARTED = time.time()  # a child's start, as near as its own code can tell
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results", "journal_scaling.json")
FIRST = "first_resumed_step"  # the time a resumed child first touched a step
PHASES = "resumed_phases.json"  # what a resumed journal child spent, and on what
WARM_UP = 1_000_000  # warm-up steps are numbered from here: other effect rows
MODES = ("NORMAL", "FULL")
# where a resumed child's time goes, spawn to first step, in order
RESUME_PARTS = ("interpreter_ms", "imports_ms", "open_files_ms", "load_plan_ms",
                "to_first_unfinished_ms")
ROUNDS = 4  # a step run is this many plans (workflows), each beside bare effects


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


def interleaved(n: int, bare_fx: sqlite3.Connection, run_chunk) -> dict:
    """``n`` steps as ROUNDS chunks (``run_chunk(first, size)``: one plan or
    workflow of ``size`` steps), each beside a chunk of as many bare effects,
    which goes first in every other round: the bare effect and the steps meet
    the same disk. Returns µs per step and per bare effect."""
    size = max(1, n // ROUNDS)
    spent = {"steps": 0.0, "bare": 0.0}
    for r in range(ROUNDS):
        first = 1 + r * size

        def bare(first=first):
            for i in range(first, first + size):
                effect(bare_fx, i)

        chunks = {"bare": bare, "steps": lambda first=first: run_chunk(first, size)}
        for name in ("bare", "steps") if r % 2 == 0 else ("steps", "bare"):
            start = time.perf_counter()
            chunks[name]()
            spent[name] += time.perf_counter() - start
    return {"per_step_us": spent["steps"] / (size * ROUNDS) * 1e6,
            "bare_effect_us": spent["bare"] / (size * ROUNDS) * 1e6}


def bare_effects(directory: str, sync: str) -> sqlite3.Connection:
    """The bare effect's own fresh file, warmed up."""
    fx = effects_db(directory, sync, name="bare")
    for i in range(WARM_UP, WARM_UP + 5):
        effect(fx, i)
    return fx


def note_first_step(directory: str) -> None:
    """In a resumed child: remember when it first touched a step (once)."""
    path = os.path.join(directory, FIRST)
    if os.environ.get("BENCH_RESUMED") and not os.path.exists(path):
        with open(path, "w") as out:
            out.write(repr(time.time()))


def touch_plan(n: int, first: int = 1, name: str = "bench"):
    from crashcourse.plan import Step, make_plan

    return make_plan(name, [Step(number, "touch", {"i": first + number - 1})
                            for number in range(1, n + 1)])


def machine() -> dict:
    import platform

    return {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
            "platform": platform.platform(), "cpus": os.cpu_count(),
            "dbos": dbos_version(), "load_avg_1min": round(os.getloadavg()[0], 2)}


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

def journal_actions(directory: str, fx: sqlite3.Connection, stop: int = 0) -> dict:
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

    return {"touch": journal.Action(execute, probe)}


def journal_steps(args) -> dict:
    """The bare effect beside ``--n`` journal steps doing it (after a warm-up),
    in plans of n / ROUNDS steps; the journal's commits counted on request."""
    from crashcourse import journal
    from crashcourse.plan import save_plan
    from crashcourse.store import opened

    bare_fx, fx = bare_effects(args.dir, args.sync), effects_db(args.dir, args.sync)
    actions = journal_actions(args.dir, fx)
    with opened(os.path.join(args.dir, "journal.sqlite"),
                synchronous=args.sync) as conn:
        warm = touch_plan(5, WARM_UP, "warm")
        journal.run_plan(conn, save_plan(conn, warm), warm, actions)
        size = max(1, args.n // ROUNDS)
        plans = {first: touch_plan(size, first, f"chunk{first}")
                 for first in range(1, size * ROUNDS + 1, size)}
        tasks = {first: save_plan(conn, plan) for first, plan in plans.items()}
        from collections import Counter

        commits = Counter()
        if args.count_commits:  # never in a timed run: the callback costs time
            conn.set_trace_callback(
                lambda sql: commits.update([sql.split(None, 1)[0].upper()]))

        def chunk(first: int, size: int) -> None:
            journal.run_plan(conn, tasks[first], plans[first], actions)

        out = interleaved(args.n, bare_fx, chunk)
    return {**out, "commits": commits["COMMIT"]}


def journal_kill(args) -> None:
    """Run (or, with BENCH_RESUMED set, resume) the stored plan; the first
    run is killed in step ``--stop``. A resumed run writes what it spent."""
    from crashcourse import journal
    from crashcourse.plan import load_plan
    from crashcourse.store import opened

    imported = time.time()
    fx = effects_db(args.dir, args.sync)
    actions = journal_actions(args.dir, fx, args.stop)
    with opened(os.path.join(args.dir, "journal.sqlite"),
                synchronous=args.sync) as conn:
        start = time.time()
        plan = load_plan(conn, args.task)
        loaded = time.time()
        journal.run_plan(conn, args.task, plan, actions)
    if os.environ.get("BENCH_RESUMED"):
        with open(os.path.join(args.dir, FIRST)) as seen:
            first = float(seen.read())
        with open(os.path.join(args.dir, PHASES), "w") as out:
            out.write(json.dumps(
                {"started_at": STARTED,
                 "imports_ms": (imported - STARTED) * 1e3,
                 "open_files_ms": (start - imported) * 1e3,
                 "load_plan_ms": (loaded - start) * 1e3,
                 "to_first_unfinished_ms": (first - loaded) * 1e3}))


def journal_same_id() -> str:
    """What the journal does with the same task and other arguments."""
    import tempfile

    from crashcourse.plan import PlanChanged, Step, make_plan, save_plan
    from crashcourse.store import opened

    with tempfile.TemporaryDirectory() as d, opened(os.path.join(d, "j")) as conn:
        first = make_plan("bench", [Step(1, "touch", {"i": 3})])
        other = make_plan("bench", [Step(1, "touch", {"i": 7})])
        task = save_plan(conn, first)
        new_id = save_plan(conn, other) != task
        # store other's task id with first's steps (as a bug or a hand would)
        conn.execute("UPDATE plan_steps SET step = (SELECT step FROM plan_steps"
                     " WHERE task = :first) WHERE task = :other",
                     {"first": task, "other": other.task})
        try:
            save_plan(conn, other)
            refused = False
        except PlanChanged:
            refused = True
    return ("new arguments get a new task id" if new_id else "same id reused") + (
        "; a stored id with other steps raises PlanChanged" if refused else "")


def journal_child(args) -> None:
    if args.child == "steps":
        print(json.dumps(journal_steps(args)))
    elif args.child == "kill":
        journal_kill(args)
    else:
        raise SystemExit(f"no {args.child} child on the journal's side")


# --- the parent: trials -------------------------------------------------------

def prepare_journal(directory: str, n: int) -> str:
    from crashcourse.plan import save_plan
    from crashcourse.store import opened

    with opened(os.path.join(directory, "journal.sqlite")) as conn:
        return save_plan(conn, touch_plan(n))


def child_argv(side: str, mode: str, n: int, directory: str, *, stop: int = 0,
               task: str = "", sync: str = "NORMAL", extra=()) -> list[str]:
    # through child.py, so both sides start from bytecode, as a worker does
    return [os.path.join(HERE, "child.py"), side, "--child", mode, "--n", str(n),
            "--stop", str(stop), "--dir", directory, "--task", task, "--sync", sync,
            *extra]


def steps_trial(side: str, n: int, sync: str) -> dict:
    """One child of ``side``: the bare effect and ``n`` steps, in ``sync``."""
    import tempfile

    from crashcourse.harness import Harness

    with tempfile.TemporaryDirectory() as d, Harness() as harness:
        done = harness.run(child_argv(side, "steps", n, d, sync=sync), timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-800:])
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {**out, "overhead_us": out["per_step_us"] - out["bare_effect_us"]}


def resume_trial(side: str, mode: str, n: int, stop: int = 0,
                 sync: str = "NORMAL") -> dict:
    """Spawn a child of ``side``; in kill mode, SIGKILL it in step ``stop``,
    spawn the replacement and time spawn -> first resumed step."""
    import tempfile
    from pathlib import Path

    from crashcourse.harness import Harness

    with tempfile.TemporaryDirectory() as d, Harness() as harness:
        task = prepare_journal(d, n) if side == "journal" else "wf-bench"
        argv = child_argv(side, mode, n, d, stop=stop, task=task, sync=sync)
        if mode != "kill":
            done = harness.run(argv, timeout=600)
            if done.returncode != 0:
                raise RuntimeError(done.stderr[-800:])
            return json.loads(done.stdout.strip().splitlines()[-1])
        worker = harness.start(argv, stop_at="in-flight")
        worker.wait_for_boundary(timeout=600)
        worker.kill()
        harness.env["BENCH_RESUMED"] = "1"
        cpu, spawned = children_cpu_ms(), time.time()
        done = harness.run(argv, timeout=600)
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
            "replacement_cpu_ms": cpu, **spent}


def children_cpu_ms() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def extra_steps(short: int, long: int) -> int:
    """How many more steps a run of ``long`` makes than one of ``short``."""
    return (long // ROUNDS - short // ROUNDS) * ROUNDS


def fsyncs_per_step(side: str, short: int = 48, long: int = 248) -> dict:
    """fsync + fdatasync calls per step in WAL+FULL, by file, from strace:
    a run of ``long`` steps minus a run of ``short``, per extra step."""
    import re
    import shutil
    import subprocess
    import tempfile
    from collections import Counter
    from pathlib import Path

    strace = shutil.which("strace")
    if strace is None:
        return {"error": "strace is not installed"}
    counted = []
    for n in (short, long):
        with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as log:
            out = os.path.join(log, "strace.txt")
            done = subprocess.run(
                [strace, "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-o", out,
                 sys.executable, *child_argv(side, "steps", n, d, sync="FULL")],
                capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                return {"error": f"strace exit {done.returncode}: {done.stderr[-300:]}"}
            text = Path(out).read_text()
        files = [os.path.relpath(f, d) for f in
                 re.findall(r"f(?:data)?sync\(\d+<([^>]*)>", text)]
        # the bare effects run n times in both runs: they do not cancel
        counted.append(Counter(f for f in files if not f.startswith("bare.")))
    names = sorted(set(counted[0]) | set(counted[1]))
    extra = extra_steps(short, long)
    per_file = {name: round((counted[1][name] - counted[0][name]) / extra, 3)
                for name in names}
    return {"per_file": {k: v for k, v in per_file.items() if v},
            "steps": [short, long]}


def commits_per_step(short: int = 48, long: int = 248) -> float:
    """The journal's COMMITs per step in WAL+FULL (SQLite's trace callback on
    its connection), the same two runs' difference as ``fsyncs_per_step``."""
    import tempfile

    counted = []
    for n in (short, long):
        with tempfile.TemporaryDirectory() as d:
            counted.append(journal_steps(SimpleNamespace(
                dir=d, n=n, sync="FULL", count_commits=True))["commits"])
    return round((counted[1] - counted[0]) / extra_steps(short, long), 3)


def resume_scaling(lengths: list[int], trials: int) -> dict:
    """Resume after a kill in step N-1, for each plan length N. The lengths
    take turns, trial by trial (after one untimed round), so a load that
    comes and goes on the machine falls on all of them."""
    for n in lengths:  # warm-up: bytecode and page cache as in any later trial
        resume_trial("journal", "kill", n, stop=n - 1)
    found = {n: [] for n in lengths}
    for trial in range(trials):
        for n in lengths if trial % 2 == 0 else lengths[::-1]:
            found[n].append(resume_trial("journal", "kill", n, stop=n - 1))
    by_length = {}
    for n, runs in found.items():
        by_length[str(n)] = {
            "spawn_to_first_resumed_step_ms": median(
                1e3 * r["spawn_to_first_resumed_s"] for r in runs),
            **{part: median(r[part] for r in runs) for part in RESUME_PARTS},
            "replacement_cpu_ms": median(r["replacement_cpu_ms"] for r in runs),
            "in_flight_step_rerun": sum(r["rerun"] for r in runs)}
        print(f"resume, {n} steps: {by_length[str(n)]}", file=sys.stderr)
    short, long = by_length[str(min(lengths))], by_length[str(max(lengths))]
    key = "spawn_to_first_resumed_step_ms"
    ratio = round(long[key] / short[key], 3)
    return {"lengths": lengths, "trials": trials, "by_length": by_length,
            "ratio_longest_to_shortest": ratio, "target_ratio": 1.25,
            "target_met": ratio <= 1.25,
            # CPU time waits for no one: a reading the machine's load moves less
            "cpu_ratio_longest_to_shortest": round(
                long["replacement_cpu_ms"] / short["replacement_cpu_ms"], 3)}


def step_costs(steps: int, trials: int) -> dict:
    out = {}
    for sync in MODES:
        runs = [steps_trial("journal", steps, sync) for _ in range(trials)]
        out[sync] = {name: median(r[name] for r in runs)
                     for name in ("per_step_us", "bare_effect_us", "overhead_us")}
    return out


CHILD_OPTIONS = {"--child": str, "--side": str, "--n": int, "--stop": int,
                 "--dir": str, "--task": str, "--sync": str}


def child_args(argv: list[str]) -> SimpleNamespace:
    """A child's options, as ``child_argv`` writes them, read without argparse
    (whose import and formatter cost a child milliseconds a worker never pays);
    ``child_parser`` takes the same options, for the parent and bench_dbos.py."""
    values = {"side": "journal", "n": 0, "stop": 0, "dir": "", "task": "",
              "sync": "NORMAL", "count_commits": False}
    words = list(argv)
    while words:
        flag = words.pop(0)
        if flag == "--count-commits":
            values["count_commits"] = True
        elif flag in CHILD_OPTIONS and words:
            values[flag[2:]] = CHILD_OPTIONS[flag](words.pop(0))
        else:
            raise SystemExit(f"bench child: cannot read {flag!r} in {argv}")
    if values.get("child") not in ("kill", "steps", "same-id") or \
            values["sync"] not in MODES:
        raise SystemExit(f"bench child: bad --child or --sync in {argv}")
    return SimpleNamespace(**values)


def child_parser():
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", choices=("kill", "steps", "same-id"))
    parser.add_argument("--side", default="journal")
    for name in ("--n", "--stop"):
        parser.add_argument(name, type=int, default=0)
    for name in ("--dir", "--task"):
        parser.add_argument(name, default="")
    parser.add_argument("--sync", default="NORMAL", choices=MODES)
    parser.add_argument("--count-commits", action="store_true")
    return parser


def main(argv=None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if "--child" in words:
        journal_child(child_args(words))
        return 0
    parser = child_parser()
    parser.add_argument("--trials", type=int, default=5)
    # a resume is ~40 ms of which the plan's length moves ~2: medians of more
    # trials than the step costs need, or the start-up's noise decides the ratio
    parser.add_argument("--resume-trials", type=int, default=15)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--lengths", type=int, nargs="+",
                        default=[10, 100, 1000, 10_000])
    args = parser.parse_args(words)
    results = {
        "resume": resume_scaling(sorted(args.lengths), args.resume_trials),
        "fsyncs_per_step_FULL": {
            "strace": fsyncs_per_step("journal"),
            "journal_commits_per_step": commits_per_step(),
            "method": "strace -f -y -e trace=fsync,fdatasync of a child running "
                      "248 and 48 steps in WAL+FULL: (calls in the long run minus "
                      "calls in the short one) / 200, by file; the bare-effect "
                      "loop's file is left out. journal_commits_per_step: COMMIT "
                      "statements on the journal's connection (SQLite's trace "
                      "callback), the same two runs' difference / 200; WAL+FULL "
                      "syncs the WAL once per commit (and at checkpoints)."},
        "step_us": step_costs(args.steps, args.trials),
    }
    document = {"measured_on": time.strftime("%Y-%m-%d"), "machine": machine(),
                "parameters": {"trials": args.trials, "steps": args.steps,
                               "resume_trials": args.resume_trials,
                               "lengths": sorted(args.lengths)},
                "results": results}
    from pathlib import Path

    from crashcourse.evidence import new_run_path, write_exclusive

    root, summary = Path(HERE).parent, Path(RESULTS)
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
