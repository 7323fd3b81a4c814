"""Chapter 01 checkpoint: an operation key outlives the process that used it.

    python checkpoints/ch01_operation_keys.py --output PATH [--repetitions N | --quick]

Every trial gets a fresh shop database (a real SQLite file) and real worker
processes (``crashcourse.workers.restock_note``). Workers are SIGKILLed at a
registered boundary by ``crashcourse.lab.harness`` and a new process reruns the task
with the same operation key. Interventions:

* ``uninterrupted``: one run, one note.
* ``kill_before_apply`` / ``kill_inside_transaction``: killed before the commit;
  nothing is on disk, the rerun applies the note once.
* ``kill_after_commit``: the rerun with the same key reports ``already_applied``.
* ``changed_payload_after_commit``: the rerun offers another quantity under the
  same key; it is refused (exit 4) and the rows stay exactly as they were.
* ``race_two_processes``: two workers released together on one key; one note.
* ``naive_kill_after_commit``: the draft without identity; the grader must see
  the second note (a detected mutant, not a pass of the draft).

Each count is read from the durable rows after the process is gone, by
queries of its own on a connection of its own: a second read of the shop's
file, apart from the one that copies the rows into the evidence, so the two
can be compared and can disagree. Every
intervention runs ``--repetitions`` times (default 3; ``--quick``: once). Exit 0
only when every trial holds, else 1; an ``--output`` that exists or cannot be
written is refused (exit 2) before anything runs. Progress goes to stderr.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from crashcourse.lab import experiment
from crashcourse.lab.harness import Moments, kill_and_resume
from crashcourse.store import count_rows, opened
from crashcourse.workers import restock_note

EVIDENCE_ID = "crashcourse.ch01.operation_keys/1"
WORKER = ["-m", "crashcourse.workers.restock_note"]
NOTE = {"sku": "oat-milk", "quantity": 24, "text": "24 cartons of oat milk"}
CHANGED = {**NOTE, "quantity": 48}

# intervention -> (boundary, mode, rerun note, expected notes, expected rerun exit)
INTERVENTIONS = {
    "uninterrupted": (None, "keyed", NOTE, 1, 0),
    "kill_before_apply": ("before_apply", "keyed", NOTE, 1, 0),
    "kill_inside_transaction": ("inside_transaction", "keyed", NOTE, 1, 0),
    "kill_after_commit": ("after_commit", "keyed", NOTE, 1, 0),
    "changed_payload_after_commit": ("after_commit", "keyed", CHANGED, 1, 4),
    "race_two_processes": (None, "keyed", NOTE, 1, 0),
    "naive_kill_after_commit": ("after_commit", "naive", NOTE, 2, 0),
}
MUTANTS = {"naive_kill_after_commit"}


def worker_args(db: Path, note: dict, mode: str) -> list[str]:
    return [*WORKER, "--db", str(db), "--task", "restock-7", "--sku", note["sku"],
            "--quantity", str(note["quantity"]), "--text", note["text"],
            "--mode", mode]


def shop_rows(db: Path) -> dict:
    """Every durable row of the shop's file, read afresh by the grader."""
    with opened(db) as conn:
        return restock_note.snapshot(conn)


def recount(db: Path) -> dict:
    """What the grader counts, by its own queries on its own connection: a
    second read of the shop's file, apart from ``shop_rows``'s copy."""
    with opened(db) as conn:
        on_order = conn.execute("SELECT coalesce(sum(on_order), 0) FROM stock")
        payloads = conn.execute("SELECT payload FROM effect_ledger ORDER BY rowid")
        return {
            "restock_notes": count_rows(conn, "restock_notes"),
            "effect_ledger": count_rows(conn, "effect_ledger"),
            "on_order": on_order.fetchone()[0],
            "ledger_payloads": [json.loads(row["payload"]) for row in payloads],
        }


def observe(db: Path) -> dict:
    """The rows (for the evidence) and the counts (for the judge), two reads."""
    return {"rows": shop_rows(db), "counts": recount(db)}


def reported(stdout: str) -> str | None:
    """The worker's own claim (recorded beside the rows, never graded alone)."""
    try:
        return json.loads(stdout.strip().splitlines()[-1])["status"]
    except (IndexError, KeyError, ValueError):
        return None


def run_killed(harness, db, name) -> dict:
    boundary, mode, rerun_note, _, _ = INTERVENTIONS[name]
    trial = kill_and_resume(
        harness, worker_args(db, NOTE, mode), boundary,
        lambda: observe(db),
        resume_args=worker_args(db, rerun_note, mode), timeout=experiment.TIMEOUT,
    )
    at_kill, final = trial.snapshot_at_interruption, trial.final_snapshot
    return {
        "boundary": boundary,
        "interrupted_pid": trial.interrupted_pid,
        "interrupted_returncode": trial.interrupted_returncode,
        "snapshot_at_interruption": at_kill["rows"],
        "counts_at_interruption": at_kill["counts"],
        "resumed_pids": [trial.resumed_pid],
        "resumed_returncodes": [trial.resumed_returncode],
        "reported_statuses": [reported(trial.resumed_stdout)],
        "final_snapshot": final["rows"],
        "final_counts": final["counts"],
        "moments": trial.moments,
    }


def run_plain(harness, db, name) -> dict:
    args, moments = worker_args(db, NOTE, "keyed"), Moments()
    if name == "race_two_processes":
        racers = [harness.start(args, stop_at="before_apply") for _ in range(2)]
        for n, racer in enumerate(racers, start=1):
            racer.wait_for_boundary(experiment.TIMEOUT)
            moments.mark(f"racer {n} at before_apply")
        for racer in racers:
            racer.release()
        moments.mark("both released")
        done = []
        for n, racer in enumerate(racers, start=1):
            done.append(racer.finish(experiment.TIMEOUT))
            moments.mark(f"racer {n} exit {done[-1].returncode}")
    else:
        moments.mark("start")
        done = [harness.run(args, experiment.TIMEOUT)]
        moments.mark(f"exit {done[0].returncode}")
    final = observe(db)
    return {
        "boundary": None, "interrupted_pid": None, "interrupted_returncode": None,
        "snapshot_at_interruption": None, "counts_at_interruption": None,
        "resumed_pids": [d.pid for d in done],
        "resumed_returncodes": [d.returncode for d in done],
        "reported_statuses": [reported(d.stdout) for d in done],
        "final_snapshot": final["rows"], "final_counts": final["counts"],
        "moments": moments,
    }


def judge(name: str, trial: dict) -> bool:
    """Did the rows (and the exit statuses) come out as the contract says?"""
    boundary, _, _, expected_notes, expected_exit = INTERVENTIONS[name]
    final = trial["final_counts"]
    holds = final["restock_notes"] == expected_notes
    holds &= final["on_order"] == expected_notes * NOTE["quantity"]
    holds &= all(code == expected_exit for code in trial["resumed_returncodes"])
    if boundary is not None:
        holds &= trial["interrupted_returncode"] == -9
    if name in MUTANTS:
        return holds  # for a mutant, "holds" means the duplicate was seen
    holds &= final["ledger_payloads"] == [NOTE]
    at_kill = trial["counts_at_interruption"]
    if boundary in ("before_apply", "inside_transaction"):
        holds &= at_kill["restock_notes"] == at_kill["effect_ledger"] == 0
    if boundary == "after_commit":
        holds &= at_kill["restock_notes"] == at_kill["effect_ledger"] == 1
    if name == "changed_payload_after_commit":  # refused: not one row moved
        holds &= trial["final_snapshot"] == trial["snapshot_at_interruption"]
    if name == "kill_after_commit":
        holds &= trial["reported_statuses"] == ["already_applied"]
    if name == "race_two_processes":
        holds &= sorted(trial["reported_statuses"]) == ["already_applied", "applied"]
    return bool(holds)


def identity(name: str, repetition: int) -> dict:
    """Which trial it was: what even a trial that could not finish records."""
    return {"intervention": name, "repetition": repetition,
            "mutant": name in MUTANTS, "expected_notes": INTERVENTIONS[name][3]}


def run_trial(harness, folder: Path, name: str, repetition: int) -> dict:
    """One intervention on a fresh shop database, judged from its rows."""
    started = time.monotonic()
    db = folder / "shop.db"
    with opened(db) as conn:
        restock_note.install(conn)
    killed = INTERVENTIONS[name][0] is not None
    trial = (run_killed if killed else run_plain)(harness, db, name)
    trial |= identity(name, repetition) | {
        "elapsed_ms": round((time.monotonic() - started) * 1000, 1)}
    trial["holds"] = judge(name, trial)
    return trial


def with_rows(failed: dict, folder: Path) -> dict:
    """A trial the harness could not complete keeps the rows it left: it
    fails the run (a timeout is not evidence either way)."""
    seen = observe(folder / "shop.db")
    return failed | {"final_snapshot": seen["rows"], "final_counts": seen["counts"]}


def summarize(trials: list[dict]) -> dict:
    per = {name: {"trials": 0, "held": 0, "final_notes": []}
           for name in INTERVENTIONS}
    for trial in trials:
        entry = per[trial["intervention"]]
        entry["trials"] += 1
        entry["held"] += trial["holds"]
        entry["final_notes"].append(trial["final_counts"]["restock_notes"])
    return {
        "trials": len(trials),
        "held": sum(t["holds"] for t in trials),
        "mutants_detected": sum(t["holds"] for t in trials if t["mutant"]),
        "all_held": all(t["holds"] for t in trials),
        "per_intervention": per,
    }


def run(args) -> tuple[dict, list[dict]]:
    """Every intervention, ``--repetitions`` times (once with ``--quick``)."""
    repetitions = 1 if args.quick else args.repetitions
    plan = [experiment.Trial(f"{name} #{repetition}", identity(name, repetition),
                             (name, repetition))
            for repetition in range(1, repetitions + 1) for name in INTERVENTIONS]
    trials = experiment.run_trials(plan, run_trial, failed=with_rows)
    return summarize(trials), trials


main = experiment.script(
    __file__, evidence_id=EVIDENCE_ID, run=run, parser=experiment.command_line(
        __doc__, count="repetitions", default=3,
        count_help="repetitions of every intervention",
        quick_help="one repetition, what the test suite runs"))

if __name__ == "__main__":
    sys.exit(main())
