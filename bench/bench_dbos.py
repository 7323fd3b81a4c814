"""The chapter 07 journal beside DBOS Transact, measured in ONE run.

    python bench/bench_dbos.py [--steps 200] [--trials 3] [--long 10000]
                               [--dbos-long 1000] [--from-artifact JSON]

Same workflow on both sides: N trivial steps, each recording one "effect" row
(keyed by step) in a separate SQLite file that stands for the outside world.
Measured, side by side: per-step cost in WAL+NORMAL and WAL+FULL (DBOS also
with its own defaults); spawn-to-first-resumed-step after a SIGKILL inside a
step; how often the in-flight step runs again (counted from effect rows);
what the same id with other arguments does; spawn-to-first-resumed-step for a
short and a long plan. DBOS runs in child processes (it is a per-process
singleton). Full results: artifacts/bench/; summary for the book:
bench/results/journal_vs_dbos.json. DBOS is a bench-only dependency.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_journal import (  # noqa: E402
    child_parser,
    dbos_version,
    effects_db,
    journal_same_id,
    journal_step_cost,
    note_first_step,
    raw_step_cost,
    resume_trial,
)

RESULTS = ROOT / "bench" / "results" / "journal_vs_dbos.json"
ARTIFACTS = ROOT / "artifacts" / "bench"


def per_step(args, side: str, sync: str) -> float | None:
    """Median per-step µs over ``args.trials`` runs of ``args.steps`` steps."""
    if side == "journal":
        runs = [journal_step_cost(args.steps, sync) for _ in range(args.trials)]
    elif side == "raw":
        runs = [raw_step_cost(args.steps, sync) for _ in range(args.trials)]
    else:
        runs = [resume_trial("dbos", "steps", args.steps, sync=sync)["per_step_us"]
                for _ in range(args.trials)]
    return round(statistics.median(runs), 1)


def recovery(args, side: str, length: int) -> dict:
    """Kill inside the last-but-one step, resume: spawn time and re-runs."""
    trials = [resume_trial(side, "kill", length, stop=length - 1)
              for _ in range(args.trials)]
    return {"length": length,
            "spawn_to_first_resumed_step_s": round(
                statistics.median(t["spawn_to_first_resumed_s"] for t in trials), 3),
            "in_flight_step_rerun": sum(t["rerun"] for t in trials),
            "trials": len(trials)}


def measure(args) -> dict:
    results = {"journal": {}, "dbos": {}, "raw_two_commit": {}}
    for sync in ("NORMAL", "FULL"):
        results["journal"][f"step_us_{sync}"] = per_step(args, "journal", sync)
        results["raw_two_commit"][f"step_us_{sync}"] = per_step(args, "raw", sync)
    results["journal"]["short"] = recovery(args, "journal", 10)
    results["journal"]["long"] = recovery(args, "journal", args.long)
    results["journal"]["same_id_other_args"] = journal_same_id()
    try:
        for sync in ("NORMAL", "FULL", "DEFAULT"):
            results["dbos"][f"step_us_{sync}"] = per_step(args, "dbos", sync)
        results["dbos"]["short"] = recovery(args, "dbos", 10)
        results["dbos"]["long"] = recovery(args, "dbos", args.dbos_long)
        results["dbos"]["same_id_other_args"] = resume_trial(
            "dbos", "same-id", 3)["same_id_other_args"]
    except Exception as failed:  # recorded, not hidden: the journal side stands
        results["dbos"]["error"] = f"{type(failed).__name__}: {failed}"
    return results


def machine() -> dict:
    import platform
    import sqlite3

    return {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
            "platform": platform.platform(), "cpus": os.cpu_count(),
            "dbos": dbos_version(), "load_avg_1min": round(os.getloadavg()[0], 2)}


def summary(results: dict, env: dict, args) -> dict:
    j, d = results["journal"], results["dbos"]

    def cell(side: dict, *path):
        value = side
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        return "n/a" if value is None else str(value)

    rows = [
        ("step µs, WAL+NORMAL", ("step_us_NORMAL",)),
        ("step µs, WAL+FULL", ("step_us_FULL",)),
        ("step µs, DBOS defaults", ("step_us_DEFAULT",)),
        ("spawn to first resumed step, s", ("short", "spawn_to_first_resumed_step_s")),
        ("in-flight step re-run (of trials)", ("short", "in_flight_step_rerun")),
        ("resume s, long plan", ("long", "spawn_to_first_resumed_step_s")),
        ("long plan length", ("long", "length")),
        ("same id, other arguments", ("same_id_other_args",)),
    ]
    notes = [f"raw two-commit step: {results['raw_two_commit']['step_us_NORMAL']} µs"
             f" (NORMAL), {results['raw_two_commit']['step_us_FULL']} µs (FULL)",
             f"medians of {args.trials} runs; {args.steps} steps per cost run"]
    if "error" in d:
        notes.append(f"DBOS could not be measured: {d['error']}")
    return {"measured_on": time.strftime("%Y-%m-%d"),
            "machine": f"{env['platform']}, {env['cpus']} cpus, load "
                       f"{env['load_avg_1min']}, python {env['python']}, "
                       f"sqlite {env['sqlite']}, dbos {env['dbos']}",
            "rows": [{"metric": m, "journal": cell(j, *p), "dbos": cell(d, *p)}
                     for m, p in rows],
            "notes": notes}


def figure(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from crashcourse import plots

    counts = {side: {mode: results[side].get(f"step_us_{mode}") or 0
                     for mode in ("NORMAL", "FULL")}
              for side in ("journal", "dbos", "raw_two_commit")}
    fig = plots.grouped_bars(counts, "per-step cost (median)", "µs per step")
    fig.savefig(path)


def dbos_engine(path: str, sync: str):
    """A SQLite engine for DBOS's system database with our PRAGMAs added."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{path}")

    @sa.event.listens_for(engine, "connect")
    def pragmas(dbapi_conn, record):  # as DBOS's own engine, plus the mode
        dbapi_conn.isolation_level = "IMMEDIATE"
        dbapi_conn.execute("PRAGMA busy_timeout=30000")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")
        if sync != "DEFAULT":
            dbapi_conn.execute("PRAGMA journal_mode=WAL")
            dbapi_conn.execute(f"PRAGMA synchronous={sync}")

    return engine


def dbos_child(args) -> None:
    """One DBOS process: a workflow of N steps, each one effect row."""
    from dbos import DBOS, SetWorkflowID

    from crashcourse.boundary import boundary

    path = os.path.join(args.dir, "dbos.sqlite")
    DBOS(config={"name": "bench", "system_database_url": f"sqlite:///{path}",
                 "system_database_engine": dbos_engine(path, args.sync),
                 "log_level": "ERROR"})
    fx = effects_db(args.dir)

    @DBOS.step()
    def touch(i: int) -> int:
        note_first_step(args.dir)
        fx.execute("INSERT INTO effects VALUES (:i, :pid)",
                   {"i": i, "pid": os.getpid()})
        if i == args.stop:
            boundary("in-flight")
        return i

    @DBOS.workflow()
    def workflow(n: int) -> int:
        for i in range(1, n + 1):
            touch(i)
        return n

    DBOS.launch()  # a resumed process recovers the pending workflow here
    try:
        if args.child == "steps":
            workflow(5)  # warm-up
            start = time.perf_counter()
            workflow(args.n)
            out = {"per_step_us": (time.perf_counter() - start) / args.n * 1e6}
        elif args.child == "same-id":
            with SetWorkflowID("same-id"):
                first = workflow(args.n)
            with SetWorkflowID("same-id"):
                second = workflow(args.n + 4)
            out = {"same_id_other_args": f"no error; n={args.n + 4} returned "
                   f"{second}, the first run's result ({first})"}
        else:
            if not os.environ.get("BENCH_RESUMED"):
                with SetWorkflowID(args.task):
                    workflow(args.n)
            out = {"result": DBOS.retrieve_workflow(args.task).get_result()}
    finally:
        DBOS.destroy()
    print(json.dumps(out))


def saved_run_path() -> Path:
    from crashcourse.evidence import new_run_path

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return new_run_path(ARTIFACTS, "journal_vs_dbos")


def main(argv=None) -> int:
    if argv is None and "--child" in sys.argv:
        dbos_child(child_parser().parse_args())
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--long", type=int, default=10_000)
    parser.add_argument("--dbos-long", type=int, default=1_000)
    parser.add_argument("--from-artifact", type=Path, metavar="JSON",
                        help="measure nothing: summary and figure from a saved run")
    args = parser.parse_args(argv)
    if args.from_artifact:  # e.g. when the figure step of a long run failed
        saved = json.loads(args.from_artifact.read_text(encoding="utf-8"))
        env, results, full = saved["machine"], saved["results"], args.from_artifact
        args = argparse.Namespace(**saved["parameters"])
    else:
        env, results, full = machine(), measure(args), saved_run_path()
        from crashcourse.evidence import write_exclusive

        write_exclusive(full, {"machine": env, "parameters": vars(args),
                               "results": results})
    figure(results, full.with_suffix(".png"))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary(results, env, args), indent=2,
                                  ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))
    print(f"run {full}; summary {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
