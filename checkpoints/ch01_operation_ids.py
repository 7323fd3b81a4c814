"""Chapter 01 checkpoint: an operation id outlives the process that used it.

    python checkpoints/ch01_operation_ids.py --output PATH [--quick] [--repetitions N]

Every trial gets a fresh shop database (a real SQLite file) and real worker
processes (``crashcourse.workers.restock_note``). Workers are SIGKILLed at a
registered boundary by ``crashcourse.harness`` and a new process reruns the task
with the same id. Interventions:

* ``uninterrupted``: one run, one note.
* ``kill_before_apply`` / ``kill_inside_transaction``: killed before the commit;
  nothing is on disk, the rerun applies the note once.
* ``kill_after_commit``: the rerun with the same id reports ``already_applied``.
* ``changed_payload_after_commit``: the rerun offers another quantity under the
  same id; it is refused (exit 4) and the rows stay exactly as they were.
* ``race_two_processes``: two workers released together on one id; one note.
* ``naive_kill_after_commit``: the draft without identity; the grader must see
  the second note (a detected mutant, not a pass of the draft).

Each count is read from the durable rows after the process is gone. Exit 0
only when every trial holds; an existing ``--output`` is refused (exit 2)
before anything runs. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from crashcourse import evidence
from crashcourse.harness import Harness, kill_and_resume
from crashcourse.workers import restock_note

SCHEMA = "crashcourse.ch01.operation_ids/1"
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


def counts(rows: dict) -> dict:
    """What the grader counts, read from a snapshot of durable rows."""
    return {
        "restock_notes": len(rows["restock_notes"]),
        "effect_ledger": len(rows["effect_ledger"]),
        "on_order": sum(row["on_order"] for row in rows["stock"]),
        "ledger_payloads": [json.loads(r["payload"]) for r in rows["effect_ledger"]],
    }


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
        lambda: restock_note.snapshot(db),
        resume_args=worker_args(db, rerun_note, mode),
    )
    return {
        "boundary": boundary,
        "interrupted_pid": trial.interrupted_pid,
        "interrupted_returncode": trial.interrupted_returncode,
        "snapshot_at_interruption": trial.snapshot_at_interruption,
        "resumed_pids": [trial.resumed_pid],
        "resumed_returncodes": [trial.resumed_returncode],
        "reported_statuses": [reported(trial.resumed_stdout)],
        "final_snapshot": trial.final_snapshot,
    }


def run_plain(harness, db, name) -> dict:
    args = worker_args(db, NOTE, "keyed")
    if name == "race_two_processes":
        racers = [harness.start(args, stop_at="before_apply") for _ in range(2)]
        for racer in racers:
            racer.wait_for_boundary()
        for racer in racers:
            racer.release()
        done = [racer.finish() for racer in racers]
    else:
        done = [harness.run(args)]
    return {
        "boundary": None, "interrupted_pid": None, "interrupted_returncode": None,
        "snapshot_at_interruption": None,
        "resumed_pids": [d.pid for d in done],
        "resumed_returncodes": [d.returncode for d in done],
        "reported_statuses": [reported(d.stdout) for d in done],
        "final_snapshot": restock_note.snapshot(db),
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


def run_trial(name: str, repetition: int) -> dict:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ch01-") as tmp, Harness() as harness:
        db = Path(tmp) / "shop.db"
        restock_note.initialize(db)
        killed = INTERVENTIONS[name][0] is not None
        trial = evidence.attempt({}, run_killed if killed else run_plain,
                                 harness, db, name)
        if "error" in trial:
            return failed_trial(name, repetition, trial["error"],
                                restock_note.snapshot(db))
    at_kill = trial["snapshot_at_interruption"]
    trial |= {
        "intervention": name,
        "repetition": repetition,
        "mutant": name in MUTANTS,
        "expected_notes": INTERVENTIONS[name][3],
        "counts_at_interruption": counts(at_kill) if at_kill else None,
        "final_counts": counts(trial["final_snapshot"]),
        "elapsed_ms": round((time.monotonic() - started) * 1000, 1),
    }
    trial["passed"] = judge(name, trial)
    return trial


def failed_trial(name: str, repetition: int, error: str, rows: dict) -> dict:
    """A trial the harness could not complete: recorded with its rows, and it
    fails the run (a timeout is not evidence either way)."""
    return {
        "intervention": name, "repetition": repetition, "mutant": name in MUTANTS,
        "expected_notes": INTERVENTIONS[name][3],
        "error": error,
        "final_snapshot": rows, "final_counts": counts(rows), "passed": False,
    }


def summarize(trials: list[dict]) -> dict:
    per = {name: {"trials": 0, "passed": 0, "final_notes": []}
           for name in INTERVENTIONS}
    for trial in trials:
        entry = per[trial["intervention"]]
        entry["trials"] += 1
        entry["passed"] += trial["passed"]
        entry["final_notes"].append(trial["final_counts"]["restock_notes"])
    return {
        "trials": len(trials),
        "passed": sum(t["passed"] for t in trials),
        "mutants_detected": sum(t["passed"] for t in trials if t["mutant"]),
        "all_held": all(t["passed"] for t in trials),
        "per_intervention": per,
    }


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="new JSON evidence file")
    parser.add_argument("--quick", action="store_true", help="one repetition")
    parser.add_argument("--repetitions", type=int, default=3, help="1 to 20")
    args = parser.parse_args(argv)
    if not 1 <= args.repetitions <= 20:
        parser.error("--repetitions must be between 1 and 20")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if evidence.refused_output(output := args.output):
        return 2
    repetitions = 1 if args.quick else args.repetitions
    trials = []
    for repetition in range(1, repetitions + 1):
        for name in INTERVENTIONS:
            trials.append(run_trial(name, repetition))
            verdict = "holds" if trials[-1]["passed"] else "FAILED"
            why = f" ({trials[-1]['error']})" if "error" in trials[-1] else ""
            print(f"{name} #{repetition}: {verdict}{why}", file=sys.stderr)
    summary = summarize(trials)
    evidence.record(output, SCHEMA, __file__, summary, trials)
    print(f"{summary['passed']}/{summary['trials']} trials held -> {output}",
          file=sys.stderr)
    return 0 if summary["all_held"] else 1


if __name__ == "__main__":
    sys.exit(main())
