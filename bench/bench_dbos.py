"""The chapter 07 journal beside DBOS Transact, like for like, in ONE run.

    python bench/bench_dbos.py [--steps 400] [--trials 7] [--kill-trials 3]
                               [--from-artifact JSON]

Both sides run the same work: N steps (four plans or workflows of N/4), each
performing THE EFFECT of bench_journal.py (one row INSERTed into a separate
SQLite file that stands for the outside world), and both sides open every
file, their own store and the effects file, in the SAME mode: WAL with
``synchronous=NORMAL``, then WAL with ``synchronous=FULL``. Each side creates
its unit of work inside the timed chunk: DBOS starts a workflow, the journal
saves its plan, claims its task (chapter 07: the runtime never runs a plan
without a claim), runs it and gives the lease back. Each child also times, in
chunks interleaved with the steps, the bare effect (the same INSERT alone) and
one bare sync (a page written and ``fdatasync``-ed, as a WAL commit in FULL
ends): each side reports its per-step TOTAL and its OVERHEAD over the effect
(total minus bare effect). Medians of ``--trials`` runs, the sides alternating.

The sides:

* ``journal``: the runtime's journal, as shipped: its probe of the target
  before each intent, the intent (and the previous outcome) in one commit
  that renews the lease, the admission (one transaction that writes
  nothing), the effect. The time spent inside the probe and inside the
  admission is read inside the steps (``Stopwatch``), per step.
* ``dbos``: a DBOS step that performs the effect, in a DBOS workflow; DBOS
  checkpoints the step's result after it returns, and asks the target
  nothing. DBOS documents its steps as at-least-once and leaves the
  idempotency check to the step's author.
* ``dbos_probe``: the same DBOS step with the check written in: it asks the
  effects file first (the journal's probe) and performs the effect only if
  the row is not there (the time inside that check, per step, read as the
  journal's).

Also measured: fsync/fdatasync calls and bytes written per step and file
in WAL+FULL (strace, when installed), the journal's statements and COMMITs
per step (SQLite's trace callback), ``--kill-trials`` SIGKILLs inside a step
of the probing DBOS side (how often its in-flight step ran again, from the
effect rows: the plain sides are counted by bench_journal.py's resume
trials), and what the same id with other arguments does on each side. The
time to resume after a kill, both sides, is bench_journal.py's
(``journal_scaling.json``): one method, one number.

DBOS runs in child processes (it is a per-process singleton); so does the
journal, for symmetry. Full results: artifacts/bench/; summary for the book:
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

from crashcourse.validate import argument_parser

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_journal import (  # noqa: E402
    FIRST,
    MODES,
    ROUNDS,
    STARTED,
    WARM_UP,
    Stopwatch,
    bare_effects,
    bare_fsyncs,
    child_argv,
    child_parser,
    effect,
    effect_seen,
    effects_db,
    interleaved,
    load_now,
    machine,
    note_first_step,
    resume_trial,
    statements_per_step,
    steps_trial,
    syscalls_per_step,
    write_phases,
)

RESULTS = ROOT / "bench" / "results" / "journal_vs_dbos.json"
ARTIFACTS = ROOT / "artifacts" / "bench"
SIDES = ("journal", "dbos", "dbos_probe")
FIGURES = ("per_step_us", "bare_effect_us", "overhead_us")


def side_costs(side: str, steps: int, sync: str) -> dict:
    """One child of ``side``: per-step total and overhead over the bare
    effect, the bare sync beside them (the journal's child also prices its
    admission)."""
    out = steps_trial(side, steps, sync, extra=("--variants",))
    costs = {"per_step_us": out["steps_us"], "bare_effect_us": out["bare_effect_us"],
             "overhead_us": out["steps_us"] - out["bare_effect_us"],
             "bare_fsync_us": out["bare_fsync_us"],
             "bare_append_fsync_us": out["bare_append_fsync_us"],
             # the overhead's CPU part: this process's CPU time, steps minus
             # bare effects; the rest of the overhead is waiting (syncs, load)
             "overhead_cpu_us": out["steps_cpu_us"] - out["bare_effect_cpu_us"]}
    costs["overhead_in_bare_fsyncs"] = costs["overhead_us"] / costs["bare_fsync_us"]
    for part in ("probe_us", "admission_us"):  # timed inside the steps
        if part in out:
            costs[part] = out[part]
    return costs


def per_step(args) -> dict:
    """Per mode and side: medians of each figure; the trials rotate the sides
    so that a slow spell hits all of them. A side that cannot run is recorded
    as its error; the others stand."""
    runs = {sync: {side: [] for side in SIDES} for sync in MODES}
    errors = {}
    for trial in range(args.trials):
        order = SIDES[trial % len(SIDES):] + SIDES[:trial % len(SIDES)]
        for sync in MODES:
            for side in order:
                if side in errors:
                    continue
                try:
                    runs[sync][side].append(side_costs(side, args.steps, sync))
                except Exception as failed:  # recorded, not hidden
                    errors[side] = f"{type(failed).__name__}: {failed}"
        print(f"[{trial + 1}/{args.trials}] step costs measured, load {load_now()}",
              file=sys.stderr)
    out = {}
    for sync in MODES:
        out[sync] = {side: {f: round(statistics.median(r[f] for r in done),
                                     2 if f.endswith("fsyncs") else 1)
                            for f in done[0]} if done else None
                     for side, done in runs[sync].items()}
        journal, dbos = (out[sync][side] for side in ("journal", "dbos"))
        out[sync]["overhead_ratio_dbos_to_journal"] = (
            round(dbos["overhead_us"] / journal["overhead_us"], 1)
            if journal and dbos else None)
    return {**out, "errors": errors} if errors else out


def probing_kills(args) -> dict:
    """SIGKILLs inside a step of the DBOS workflow whose step asks the target
    first: how often the in-flight step ran again (from the effect rows)."""
    trials = [resume_trial("dbos_probe", 10, stop=9) for _ in range(args.kill_trials)]
    return {"length": 10, "kill_trials": len(trials),
            "in_flight_step_rerun": sum(t["rerun"] for t in trials)}


def journal_same_id() -> str:
    """What the journal does with the same task and other arguments."""
    import tempfile

    from crashcourse.journal.plan import PlanChanged, Step, make_plan, save_plan
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


def same_id_child() -> dict:
    """DBOS's side of the same question, in a child of its own."""
    import tempfile

    from crashcourse.lab.harness import Harness

    with tempfile.TemporaryDirectory() as d, Harness() as harness:
        done = harness.run(child_argv("dbos", "same-id", 3, d), timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-800:])
    return json.loads(done.stdout.strip().splitlines()[-1])["same_id_other_args"]


def queue_polling_interval_s() -> float | None:
    """DBOS's default queue polling interval: a recovered workflow is put back
    on an internal queue, which a thread polls this often (DBOS 3.4)."""
    try:
        from dbos import _queue

        return _queue.DEFAULT_QUEUE_POLLING_INTERVAL_SEC
    except (ImportError, AttributeError):
        return None


def measure(args) -> dict:
    results = {"dbos_queue_polling_interval_s": queue_polling_interval_s(),
               "per_step": per_step(args), "syscalls_per_step_FULL": {},
               "journal_statements_per_step_FULL": statements_per_step(),
               "same_id_other_args": {"journal": journal_same_id()}}
    for side in ("journal", "dbos"):
        results["syscalls_per_step_FULL"][side] = syscalls_per_step(side)
    try:
        results["dbos_probe_kills"] = probing_kills(args)
        results["same_id_other_args"]["dbos"] = same_id_child()
    except Exception as failed:  # recorded, not hidden: the rest stands
        results["dbos_error"] = f"{type(failed).__name__}: {failed}"
    return results


def shown(value) -> str:
    return "n/a" if value is None else str(value)


def summary(results: dict, env: dict, args) -> dict:
    """The book's summary (the measurements appendix reads it): ``per_step``,
    ``syscalls_per_step_FULL`` and the rest as data; ``rows`` as a table whose
    "step µs" rows chapter 09 once read."""
    steps = results["per_step"]
    rows = [{"metric": f"{label}, WAL+{sync}",
             **{side: shown((steps[sync][side] or {}).get(field)) for side in SIDES}}
            for label, field in (("step µs", "per_step_us"),
                                 ("bare effect µs", "bare_effect_us"),
                                 ("overhead µs", "overhead_us"),
                                 ("one bare fdatasync µs", "bare_fsync_us"))
            for sync in MODES]
    return {"measured_on": time.strftime("%Y-%m-%d"),
            "machine": env,
            "parameters": {"steps": args.steps, "trials": args.trials,
                           "kill_trials": args.kill_trials},
            "per_step": steps,
            "syscalls_per_step_FULL": results["syscalls_per_step_FULL"],
            "journal_statements_per_step_FULL":
                results["journal_statements_per_step_FULL"],
            "dbos_probe_kills": results.get("dbos_probe_kills"),
            "dbos_queue_polling_interval_s": results["dbos_queue_polling_interval_s"],
            "same_id_other_args": results["same_id_other_args"],
            "errors": {k: v for k, v in (("dbos", results.get("dbos_error")),
                                         *steps.get("errors", {}).items()) if v},
            "rows": rows}


def figure(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from crashcourse import figures

    steps = results["per_step"]
    counts = {side: {f"{what}, WAL+{sync}": (steps[sync][side] or {}).get(field, 0)
                     for sync in MODES
                     for what, field in (("step", "per_step_us"),
                                         ("overhead", "overhead_us"))}
              for side in SIDES}
    fig = figures.grouped_bars(counts, "per step: total and overhead over the effect "
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
    """One DBOS process: its runners (the bare effect, the bare sync, N steps
    in workflows), or a kill / same-id trial. A resumed process reports where
    its time went, spawn to first resumed step: imports, configuration,
    launch until the workflow is entered again, the replay of its recorded
    steps up to the step in flight."""
    from dbos import DBOS, SetWorkflowID

    from crashcourse.boundary import boundary

    imported = time.time()
    resumed = bool(os.environ.get("BENCH_RESUMED"))
    steps = args.child == "steps"
    probing = args.side == "dbos_probe"
    path = os.path.join(args.dir, "dbos.sqlite")
    DBOS(config={"name": "bench", "system_database_url": f"sqlite:///{path}",
                 "system_database_engine": dbos_engine(path, args.sync),
                 "log_level": "ERROR"})
    configured = time.time()
    fx = effects_db(args.dir, args.sync)
    entered = []  # when the resumed process first entered the workflow
    watch = Stopwatch()
    seen = watch.wrap("probe", effect_seen)

    @DBOS.step()
    def touch(i: int) -> int:
        note_first_step(args.dir)
        if probing and seen(fx, i)[0]:
            return i  # the check DBOS leaves to the step's author
        effect(fx, i)
        if i == args.stop:
            boundary("in-flight")
        return i

    @DBOS.workflow()
    def workflow(first: int, n: int) -> int:
        if resumed and not entered:
            entered.append(time.time())
        for i in range(first, first + n):
            touch(i)
        return n

    DBOS.launch()  # a resumed process recovers the pending workflow from here
    try:
        if steps:
            workflow(WARM_UP, 5)  # warm-up, rows numbered apart
            runners = {"bare_effect": bare_effects(args.dir, args.sync),
                       "steps": workflow, "bare_fsync": bare_fsyncs(args.dir),
                       "bare_append_fsync": bare_fsyncs(args.dir, grow=True)}
            watch.spent.clear()  # the warm-up's probes are not the steps'
            out = interleaved(args.n, runners)
            out |= watch.per_step_us(args.n // ROUNDS * ROUNDS)
        elif args.child == "same-id":
            with SetWorkflowID("same-id"):
                first = workflow(1, args.n)
            with SetWorkflowID("same-id"):
                second = workflow(1, args.n + 4)
            out = {"same_id_other_args": f"no error; n={args.n + 4} returned "
                   f"{second}, the first run's result ({first})"}
        else:
            if not resumed:
                with SetWorkflowID(args.task):
                    workflow(1, args.n)
            out = {"result": DBOS.retrieve_workflow(args.task).get_result()}
    finally:
        DBOS.destroy()
    if resumed and args.child == "kill":
        with open(os.path.join(args.dir, FIRST)) as seen:
            first_touch = float(seen.read())
        write_phases(args.dir, imports_ms=(imported - STARTED) * 1e3,
                     configure_ms=(configured - imported) * 1e3,
                     launch_ms=(entered[0] - configured) * 1e3,
                     replay_ms=(first_touch - entered[0]) * 1e3)
    print(json.dumps(out))


def saved_run_path() -> Path:
    from crashcourse.lab.evidence import new_run_path

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return new_run_path(ARTIFACTS, "journal_vs_dbos")


def main(argv=None) -> int:
    if argv is None and "--child" in sys.argv:
        dbos_child(child_parser().parse_args())
        return 0
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--kill-trials", type=int, default=3)
    parser.add_argument("--from-artifact", type=Path, metavar="JSON",
                        help="measure nothing: summary and figure from a saved run")
    args = parser.parse_args(argv)
    if args.from_artifact:  # e.g. when the figure step of a long run failed
        saved = json.loads(args.from_artifact.read_text(encoding="utf-8"))
        env, results, full = saved["machine"], saved["results"], args.from_artifact
        args = argparse.Namespace(**saved["parameters"])
    else:
        load_before = load_now()
        results, full = measure(args), saved_run_path()
        env = {**machine(), "load_avg_at_start": load_before,
               "load_avg_at_end": load_now()}
        from crashcourse.lab.evidence import write_exclusive

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
