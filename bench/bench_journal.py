"""The chapter 07 journal measured alone, and the pieces bench_dbos.py shares.

    python bench/bench_journal.py            # our side only; artifacts/bench/
    python bench/bench_journal.py --child kill --side journal --n N --stop K --dir D

A "trivial step" records one effect row, keyed by step, in ``effects.sqlite``
(the outside world). The journal's probe asks that file by key. The child
modes are what a resume trial spawns: a worker killed (SIGKILL, through
``crashcourse.harness``) right after the effect of step K, then a new process
that finishes the workflow and notes when it first touched a step.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIRST = "first_resumed_step"  # file a resumed child writes its first step time to


def effects_db(directory: str) -> sqlite3.Connection:
    # DBOS may run a recovered step on another thread: allow that thread
    conn = sqlite3.connect(os.path.join(directory, "effects.sqlite"),
                           isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE IF NOT EXISTS effects (step INTEGER, pid INTEGER)")
    return conn


def note_first_step(directory: str) -> None:
    """In a resumed child: remember when it first touched a step (once)."""
    path = os.path.join(directory, FIRST)
    if os.environ.get("BENCH_RESUMED") and not os.path.exists(path):
        Path(path).write_text(repr(time.time()))


def noop_plan(n: int):
    from crashcourse.plan import Step, make_plan

    return make_plan("bench", [Step(i, "touch", {"i": i}) for i in range(1, n + 1)])


def journal_step_cost(n: int, sync: str) -> float:
    """µs per step of ``run_plan`` with a no-op action, in-process."""
    from crashcourse import journal
    from crashcourse.plan import save_plan
    from crashcourse.store import opened

    noop = journal.Action(lambda args, operation_key: {},
                          lambda args, operation_key: (False, {}))
    with tempfile.TemporaryDirectory() as d, opened(
        os.path.join(d, "j.sqlite"), synchronous=sync
    ) as conn:
        plan = noop_plan(n)
        task = save_plan(conn, plan)
        journal.install(conn)
        start = time.perf_counter()
        journal.run_plan(conn, task, plan, {"touch": noop})
        return (time.perf_counter() - start) / n * 1e6


def raw_step_cost(n: int, sync: str) -> float:
    """µs per step of the bare minimum: commit an intent, commit an outcome."""
    from crashcourse.store import opened

    with tempfile.TemporaryDirectory() as d, opened(
        os.path.join(d, "raw.sqlite"), synchronous=sync
    ) as conn:
        conn.execute("CREATE TABLE j (step INTEGER PRIMARY KEY, outcome TEXT)")
        start = time.perf_counter()
        for i in range(n):
            conn.execute("INSERT INTO j (step) VALUES (:i)", {"i": i})
            conn.execute("UPDATE j SET outcome = 'ok' WHERE step = :i", {"i": i})
        return (time.perf_counter() - start) / n * 1e6


def journal_same_id() -> str:
    """What the journal does with the same task and other arguments."""
    from crashcourse.plan import PlanChanged, Step, make_plan, save_plan
    from crashcourse.store import opened

    with tempfile.TemporaryDirectory() as d, opened(os.path.join(d, "j")) as conn:
        first = make_plan("bench", [Step(1, "touch", {"i": 3})])
        other = make_plan("bench", [Step(1, "touch", {"i": 7})])
        task = save_plan(conn, first)
        new_id = save_plan(conn, other) != task
        conn.execute("UPDATE plans SET body = :body WHERE task = :task",
                     {"body": first.body(), "task": other.task})
        try:
            save_plan(conn, other)
            refused = False
        except PlanChanged:
            refused = True
    return ("new arguments get a new task id" if new_id else "same id reused") + (
        "; a stored id with other steps raises PlanChanged" if refused else "")


def journal_child(args) -> None:
    from crashcourse import journal
    from crashcourse.boundary import boundary
    from crashcourse.plan import load_plan
    from crashcourse.store import opened

    fx = effects_db(args.dir)

    def execute(step_args, operation_key):
        note_first_step(args.dir)
        fx.execute("INSERT INTO effects VALUES (:i, :pid)",
                   {"i": step_args["i"], "pid": os.getpid()})
        if step_args["i"] == args.stop:
            boundary("in-flight")
        return {}

    def probe(step_args, operation_key):
        note_first_step(args.dir)
        row = fx.execute("SELECT count(*) FROM effects WHERE step = :i",
                         {"i": step_args["i"]}).fetchone()
        return row[0] > 0, {"rows": row[0]}

    with opened(os.path.join(args.dir, "journal.sqlite")) as conn:
        plan = load_plan(conn, args.task)
        journal.run_plan(conn, args.task, plan,
                         {"touch": journal.Action(execute, probe)})


def prepare_journal(directory: str, n: int) -> str:
    from crashcourse.plan import save_plan
    from crashcourse.store import opened

    with opened(os.path.join(directory, "journal.sqlite")) as conn:
        return save_plan(conn, noop_plan(n))


def resume_trial(side: str, mode: str, n: int, stop: int = 0, sync: str = "NORMAL"):
    """Spawn a child of ``side``; in kill mode, SIGKILL it in step ``stop``,
    spawn the replacement and time spawn -> first resumed step."""
    from crashcourse.harness import Harness

    script = HERE / ("bench_journal.py" if side == "journal" else "bench_dbos.py")
    with tempfile.TemporaryDirectory() as d, Harness() as harness:
        task = prepare_journal(d, n) if side == "journal" else "wf-bench"
        argv = [str(script), "--child", mode, "--n", str(n), "--stop", str(stop),
                "--dir", d, "--task", task, "--sync", sync]
        if mode != "kill":
            done = harness.run(argv, timeout=600)
            if done.returncode != 0:
                raise RuntimeError(done.stderr[-800:])
            return json.loads(done.stdout.strip().splitlines()[-1])
        worker = harness.start(argv, stop_at="in-flight")
        worker.wait_for_boundary(timeout=600)
        worker.kill()
        harness.env["BENCH_RESUMED"] = "1"
        spawned = time.time()
        done = harness.run(argv, timeout=600)
        del harness.env["BENCH_RESUMED"]
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-800:])
        first = float(Path(d, FIRST).read_text())
        runs = effects_db(d).execute(
            "SELECT count(*) FROM effects WHERE step = :s", {"s": stop}).fetchone()[0]
    return {"spawn_to_first_resumed_s": first - spawned, "rerun": int(runs > 1)}


def dbos_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("dbos")
    except Exception:
        return None


def child_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", choices=("kill", "steps", "same-id"))
    parser.add_argument("--side", default="journal")
    for name in ("--n", "--stop"):
        parser.add_argument(name, type=int, default=0)
    for name in ("--dir", "--task"):
        parser.add_argument(name, default="")
    parser.add_argument("--sync", default="NORMAL")
    return parser


def main(argv=None) -> int:
    args = child_parser().parse_args(argv)
    if args.child:
        journal_child(args)
        return 0
    results = {f"step_us_{s}": round(statistics.median(
        journal_step_cost(200, s) for _ in range(3)), 1) for s in ("NORMAL", "FULL")}
    results["resume"] = resume_trial("journal", "kill", 10, stop=9)
    results["resume_long"] = resume_trial("journal", "kill", 10_000, stop=9_999)
    from crashcourse.evidence import new_run_path, versions, write_exclusive

    out = new_run_path(HERE.parent / "artifacts" / "bench", "journal")
    write_exclusive(out, {"versions": versions(), "results": results})
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
