"""The chapter 07 journal beside DBOS Transact, like for like, in ONE run.

    python bench/bench_dbos.py [--steps 400] [--trials 5] [--kill-trials 3]
                               [--long 10000] [--dbos-long 1000]
                               [--from-artifact JSON]

Both sides run the same work: N steps (four plans or workflows of N/4), each
performing THE EFFECT of bench_journal.py (one row INSERTed into a separate
SQLite file that stands for the outside world), and both sides open every
file, their own store and the effects file, in the SAME mode: WAL with
``synchronous=NORMAL``, then WAL with ``synchronous=FULL``. Each child also
times the bare effect (the same INSERT alone, in chunks interleaved with the
steps), so each side reports its per-step TOTAL and its OVERHEAD over the
effect (total minus bare effect), medians of ``--trials`` runs, the two sides
alternating. The journal's overhead includes its probe of the target before
each intent (what an unwind would restore); DBOS asks the target nothing.

Also measured: fsync + fdatasync calls per step in WAL+FULL (strace, when
installed); ``--kill-trials`` SIGKILLs inside a step per side, how often the
in-flight step ran again (counted from effect rows) and the time from spawning
the replacement to its first resumed step; the same for a long plan; what the
same id with other arguments does. DBOS runs in child processes (it is a
per-process singleton); so does the journal, for symmetry. Full results:
artifacts/bench/; summary for the book: bench/results/journal_vs_dbos.json.
DBOS is a bench-only dependency.
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
    MODES,
    WARM_UP,
    bare_effects,
    child_parser,
    effect,
    effects_db,
    fsyncs_per_step,
    interleaved,
    journal_same_id,
    machine,
    note_first_step,
    resume_trial,
    steps_trial,
)

RESULTS = ROOT / "bench" / "results" / "journal_vs_dbos.json"
ARTIFACTS = ROOT / "artifacts" / "bench"
SIDES = ("journal", "dbos")
FIGURES = ("per_step_us", "bare_effect_us", "overhead_us")


def per_step(args) -> dict:
    """Per mode and side: medians of the total, the bare effect, the overhead;
    the trials alternate sides so that a slow spell hits both. A side that
    cannot run is recorded as its error; the other side stands."""
    runs = {sync: {side: [] for side in SIDES} for sync in MODES}
    errors = {}
    for trial in range(args.trials):
        for sync in MODES:
            for side in SIDES if trial % 2 == 0 else SIDES[::-1]:
                if side in errors:
                    continue
                try:
                    runs[sync][side].append(steps_trial(side, args.steps, sync))
                except Exception as failed:  # recorded, not hidden
                    errors[side] = f"{type(failed).__name__}: {failed}"
        print(f"[{trial + 1}/{args.trials}] step costs measured", file=sys.stderr)
    out = {}
    for sync in MODES:
        out[sync] = {side: {f: round(statistics.median(r[f] for r in done), 1)
                            if done else None for f in FIGURES}
                     for side, done in runs[sync].items()}
        journal, dbos = (out[sync][side]["overhead_us"] for side in SIDES)
        out[sync]["overhead_ratio_dbos_to_journal"] = (
            round(dbos / journal, 1) if journal and dbos else None)
    return {**out, "errors": errors} if errors else out


def recovery(args, side: str, length: int) -> dict:
    """Kill inside the last-but-one step, resume: spawn time and re-runs."""
    trials = [resume_trial(side, "kill", length, stop=length - 1)
              for _ in range(args.kill_trials)]
    return {"length": length,
            "spawn_to_first_resumed_step_s": round(
                statistics.median(t["spawn_to_first_resumed_s"] for t in trials), 3),
            "in_flight_step_rerun": sum(t["rerun"] for t in trials),
            "kill_trials": len(trials)}


def measure(args) -> dict:
    results = {"per_step": per_step(args), "fsyncs_per_step_FULL": {},
               "journal": {}, "dbos": {}}
    for side in SIDES:
        results["fsyncs_per_step_FULL"][side] = fsyncs_per_step(side)
    results["journal"]["short"] = recovery(args, "journal", 10)
    results["journal"]["long"] = recovery(args, "journal", args.long)
    results["journal"]["same_id_other_args"] = journal_same_id()
    try:
        results["dbos"]["short"] = recovery(args, "dbos", 10)
        results["dbos"]["long"] = recovery(args, "dbos", args.dbos_long)
        results["dbos"]["same_id_other_args"] = resume_trial(
            "dbos", "same-id", 3)["same_id_other_args"]
    except Exception as failed:  # recorded, not hidden: the journal side stands
        results["dbos"]["error"] = f"{type(failed).__name__}: {failed}"
    return results


def shown(value) -> str:
    return "n/a" if value is None else str(value)


def fsync_total(counted: dict) -> str:
    """All fsync + fdatasync calls per step, from strace's per-file counts."""
    if "per_file" not in counted:
        return "n/a"
    return str(round(sum(counted["per_file"].values()), 2))


def summary(results: dict, env: dict, args) -> dict:
    """The book's summary. Chapter 07 prints ``rows`` and draws the "step µs"
    rows; chapter 09 reads the journal's "step µs" rows. ``kill_trials``,
    ``per_step`` and ``fsyncs_per_step_FULL`` hold the same figures as data."""
    steps, fsyncs = results["per_step"], results["fsyncs_per_step_FULL"]
    sides = {side: results[side] for side in SIDES}

    def cell(side: str, *path):
        value = sides[side]
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        return "n/a" if value is None else str(value)

    rows = [{"metric": f"{label}, WAL+{sync}",
             **{side: shown(steps[sync][side][field]) for side in SIDES}}
            for label, field in (("step µs", "per_step_us"),  # chapter 07's figure
                                 ("bare effect µs", "bare_effect_us"),
                                 ("overhead µs", "overhead_us"))
            for sync in MODES]
    rows.append({"metric": "fsyncs per step, WAL+FULL",
                 **{side: fsync_total(fsyncs[side]) for side in SIDES}})
    for metric, path in (
        ("spawn to first resumed step, s", ("short", "spawn_to_first_resumed_step_s")),
        ("kill trials", ("short", "kill_trials")),
        ("in-flight step re-run (of trials)", ("short", "in_flight_step_rerun")),
        ("resume s, long plan", ("long", "spawn_to_first_resumed_step_s")),
        ("long plan length", ("long", "length")),
        ("same id, other arguments", ("same_id_other_args",)),
    ):
        rows.append({"metric": metric, **{side: cell(side, *path) for side in SIDES}})
    ratios = {sync: steps[sync]["overhead_ratio_dbos_to_journal"] for sync in MODES}
    errors = {**steps.get("errors", {}), **{
        side: sides[side]["error"] for side in SIDES if "error" in sides[side]}}
    notes = [  # chapter 07 reads the kill trials from the first "medians of N runs"
        f"{args.kill_trials} kill trials per side; spawn to first resumed step: "
        f"medians of {args.kill_trials} runs",
        f"step costs: medians of {args.trials} runs of {args.steps} steps per side "
        "and mode, the sides alternating",
        "both sides perform the same effect (one row INSERTed into a separate "
        "SQLite file) with every file in the same mode, WAL+NORMAL or WAL+FULL",
        "overhead = step minus the bare effect (the same INSERT alone, timed in the "
        f"same process, interleaved): DBOS's / the journal's = {ratios['NORMAL']}x "
        f"in WAL+NORMAL, {ratios['FULL']}x in WAL+FULL",
        "the journal's overhead includes its probe of the target before each "
        "intent; DBOS asks the target nothing",
        "fsyncs per step: fsync + fdatasync calls on every file, the effect's "
        "included, counted with strace",
    ]
    notes += [f"{side} could not be measured: {error}"
              for side, error in errors.items()]
    return {"measured_on": time.strftime("%Y-%m-%d"),
            "machine": f"{env['platform']}, {env['cpus']} cpus, load "
                       f"{env['load_avg_1min']}, python {env['python']}, "
                       f"sqlite {env['sqlite']}, dbos {env['dbos']}",
            "kill_trials": args.kill_trials,
            "per_step": steps,
            "fsyncs_per_step_FULL": fsyncs,
            "rows": rows,
            "notes": notes}


def figure(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from crashcourse import plots

    steps = results["per_step"]
    counts = {side: {f"{what}, WAL+{sync}": steps[sync][side][field] or 0
                     for sync in MODES
                     for what, field in (("step", "per_step_us"),
                                         ("overhead", "overhead_us"))}
              for side in SIDES}
    fig = plots.grouped_bars(counts, "per step: total and overhead over the effect "
                             "(median)", "µs per step")
    fig.savefig(path)


def dbos_engine(path: str, sync: str):
    """A SQLite engine for DBOS's system database: DBOS's own PRAGMAs, plus WAL
    and ``sync``, the mode the journal's store runs in."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{path}")

    @sa.event.listens_for(engine, "connect")
    def pragmas(dbapi_conn, record):  # as DBOS's own engine, plus the mode
        dbapi_conn.isolation_level = "IMMEDIATE"
        dbapi_conn.execute("PRAGMA busy_timeout=30000")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")
        dbapi_conn.execute("PRAGMA journal_mode=WAL")  # as the journal's store
        dbapi_conn.execute(f"PRAGMA synchronous={sync}")

    return engine


def dbos_child(args) -> None:
    """One DBOS process: the bare effect, then a workflow of N steps, each
    performing the effect; or a kill / same-id trial."""
    from dbos import DBOS, SetWorkflowID

    from crashcourse.boundary import boundary

    steps = args.child == "steps"
    path = os.path.join(args.dir, "dbos.sqlite")
    DBOS(config={"name": "bench", "system_database_url": f"sqlite:///{path}",
                 "system_database_engine": dbos_engine(path, args.sync),
                 "log_level": "ERROR"})
    fx = effects_db(args.dir, args.sync)

    @DBOS.step()
    def touch(i: int) -> int:
        note_first_step(args.dir)
        effect(fx, i)
        if i == args.stop:
            boundary("in-flight")
        return i

    @DBOS.workflow()
    def workflow(first: int, n: int) -> int:
        for i in range(first, first + n):
            touch(i)
        return n

    DBOS.launch()  # a resumed process recovers the pending workflow here
    try:
        if steps:
            workflow(WARM_UP, 5)  # warm-up, rows numbered apart
            out = interleaved(args.n, bare_effects(args.dir, args.sync), workflow)
        elif args.child == "same-id":
            with SetWorkflowID("same-id"):
                first = workflow(1, args.n)
            with SetWorkflowID("same-id"):
                second = workflow(1, args.n + 4)
            out = {"same_id_other_args": f"no error; n={args.n + 4} returned "
                   f"{second}, the first run's result ({first})"}
        else:
            if not os.environ.get("BENCH_RESUMED"):
                with SetWorkflowID(args.task):
                    workflow(1, args.n)
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
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--kill-trials", type=int, default=3)
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
