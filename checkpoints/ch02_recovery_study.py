"""The recovery study of chapter 02: real workers, real SIGKILL, graded from rows.

    python checkpoints/ch02_recovery_study.py --output PATH [--repetitions N]
        [--seed N]
    python checkpoints/ch02_recovery_study.py --output PATH --quick

Every trial gets a NEW payment database with one approved order (4000 cents,
USD), starts the real ``pay_invoice`` worker, SIGKILLs it at a registered
boundary (except the uninterrupted runs), optionally revokes the approval,
and starts a replacement. In the ``recovery_killed_*`` trials recovery dies
too: ``RECOVERY_KILLS`` replacements in a row are SIGKILLed at random instants
(uniform over the life of a replacement in the same situation, measured
first; drawn from ``--seed``) before a last one runs to its end. A replacement
counts as killed only if it exited -9 (one can still end before its instant).

The grader reads the durable rows of two files: the payment service's
payments and the worker's own checkpoint. Each snapshot holds the rows and,
beside them, the counts taken by a second, separate read of each file (a
``count(*)`` on a connection of its own), so the two can be compared. It
never reads a worker's exit code or its printed report to decide anything:
the new-key mutant exits 0 after paying twice. The mutant runs where it
fails (killed after its payment, and with its recovery killed) and where it
passes (uninterrupted, killed before its payment): a suite that never kills
in the gap never sees it.

Every intervention runs ``--repetitions`` times (default 3; ``--quick``: once).
A mutant trial holds when the grader says what the mutant did: detected where
it pays twice, clean where it does not. Exit 0 only when every trial holds,
else 1; exit 2 for bad arguments or an ``--output`` that exists or cannot be
written (refused before any trial runs; a file is left as it was).
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from time import monotonic
from typing import NamedTuple

from crashcourse.lab import experiment
from crashcourse.lab.harness import Harness, Moments
from crashcourse.services import payments
from crashcourse.workers import paying

EVIDENCE_ID = "crashcourse.ch02.recovery_study/1"
TASK, ORDER, AMOUNT, CURRENCY = "restock-1", "PO-1001", 4000, "USD"
WORKER = ("-m", "crashcourse.workers.pay_invoice")
RECOVERY_KILLS = 3  # replacements killed at random instants before the last one


class Intervention(NamedTuple):
    """One row of the study: where to kill, how to resume, what must remain."""

    name: str
    boundary: str | None  # None: an uninterrupted run
    retry: str  # "reuse-key" (the reference) or "new-key" (the mutant)
    revoke: bool  # withdraw the approval between the kill and the restart
    expected_payments: int  # exactly; for the mutant's killed recovery, at least
    recovery_kills: int = 0  # replacements killed at random instants first

    @property
    def role(self) -> str:
        return "mutant" if self.retry == "new-key" else "reference"

    @property
    def exact(self) -> bool:
        """Whether ``expected_payments`` is exact: how many payments a
        mutant's killed replacements add depends on where they die."""
        return not (self.role == "mutant" and self.recovery_kills)


REF, MUTANT = "reuse-key", "new-key"
INTERVENTIONS = (
    Intervention("uninterrupted", None, REF, False, 1),
    Intervention("kill_before_payment", "before_payment", REF, False, 1),
    Intervention("kill_after_payment", "after_payment", REF, False, 1),
    Intervention("kill_after_checkpoint", "after_checkpoint", REF, False, 1),
    Intervention("recovery_killed_before_payment", "before_payment", REF, False, 1,
                 RECOVERY_KILLS),
    Intervention("recovery_killed_after_payment", "after_payment", REF, False, 1,
                 RECOVERY_KILLS),
    Intervention("revoked_before_payment", "before_payment", REF, True, 0),
    Intervention("revoked_after_payment", "after_payment", REF, True, 1),
    Intervention("mutant_uninterrupted", None, MUTANT, False, 1),
    Intervention("mutant_kill_before_payment", "before_payment", MUTANT, False, 1),
    Intervention("mutant_kill_after_payment", "after_payment", MUTANT, False, 2),
    Intervention("mutant_recovery_killed_after_payment", "after_payment", MUTANT,
                 False, 2, RECOVERY_KILLS),
)


def worker_file(db: Path) -> Path:
    """The worker's own file (its checkpoint), beside the service's file."""
    return db.with_name(f"{db.stem}-worker.sqlite")


def durable(db: Path) -> dict:
    """The rows of both files (the service's payments, the worker's checkpoints)
    and the counts of a second read, to be compared with them."""
    state = worker_file(db)
    return {"rows": paying.snapshot(db, state), **paying.recount(db, state)}


def double_charged(rows: dict) -> dict[str, list[str]]:
    """Orders with more than one committed payment, and the keys that paid them."""
    keys: dict[str, list[str]] = {}
    for payment in rows["payments"]:
        keys.setdefault(payment["order_id"], []).append(payment["key"])
    return {order: sorted(ks) for order, ks in keys.items() if len(ks) > 1}


def contract_holds(spec: Intervention, trial: dict) -> bool:
    """The reference contract, read from the final rows only."""
    final = trial["final_snapshot"]
    rows = final["rows"]
    if final["payments"] != spec.expected_payments or double_charged(rows):
        return False
    if spec.expected_payments == 0:
        return final["checkpoints"] == 0  # refused: nothing paid, nothing claimed
    (payment,) = rows["payments"]
    checkpoints = rows["checkpoints"]
    # Finished means: the worker's record names the very key the service charged.
    if len(checkpoints) != 1 or checkpoints[0]["key"] != payment["key"]:
        return False
    at_kill = trial["snapshot_at_interruption"]
    if at_kill is not None and at_kill["rows"]["checkpoints"]:
        # a task found finished is left alone: its record is not rewritten
        return at_kill["rows"]["checkpoints"] == checkpoints
    return True


def grade(spec: Intervention, trial: dict) -> dict:
    """``detected`` and ``holds`` for one trial, from durable rows (and -9)."""
    killed = spec.boundary is None or trial["interrupted_returncode"] == -9
    detected = bool(double_charged(trial["final_snapshot"]["rows"]))
    if spec.role == "mutant":
        paid = trial["final_snapshot"]["payments"]
        enough = paid == spec.expected_payments if spec.exact else (
            paid >= spec.expected_payments)
        # detected exactly where it pays twice: caught there, clean elsewhere
        holds = killed and enough and detected == (spec.expected_payments > 1)
    else:
        holds = killed and contract_holds(spec, trial)
    return {"detected": detected, "holds": holds}


def worker_args(db: Path, retry: str) -> list[str]:
    return [*WORKER, "--payments", str(db), "--state", str(worker_file(db)),
            "--task", TASK, "--order", ORDER, "--amount", str(AMOUNT),
            "--currency", CURRENCY, "--retry", retry]


def fresh_database(directory: Path, spec: Intervention, repetition: int) -> Path:
    db = directory / f"{spec.name}-{repetition}.sqlite"
    payments.install(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    return db


def interrupt(harness: Harness, spec: Intervention, db: Path, clock,
              instants: Moments) -> dict:
    """Start the worker, SIGKILL it at the boundary, snapshot, maybe revoke."""
    worker = harness.start(worker_args(db, spec.retry), stop_at=spec.boundary)
    worker.wait_for_boundary(experiment.TIMEOUT)
    at_boundary = clock()
    instants.mark(f"at {spec.boundary}")
    killed = worker.kill()
    moments = {"boundary": at_boundary, "killed": clock()}
    instants.mark("killed")
    seen = durable(db)
    if spec.revoke:
        payments.revoke(db, ORDER)
        moments["revoked"] = clock()
        instants.mark("revoked")
    return {
        "interrupted_pid": killed.pid,
        "interrupted_returncode": killed.returncode,
        "snapshot_at_interruption": seen,
        "moments": moments,
    }


def kill_at_instant(harness: Harness, args: list[str], after_s: float,
                    instants: Moments) -> dict:
    """Start a replacement and SIGKILL its group ``after_s`` seconds after its
    start, wherever it is, unless it ended first (then it is not killed)."""
    instants.mark("start")
    worker = harness.start(args)
    try:
        worker.process.wait(timeout=max(0.0, worker.started + after_s - monotonic()))
    except subprocess.TimeoutExpired:
        pass  # still running at the instant
    lived = monotonic() - worker.started
    finished = worker.kill(expect_sigkill=False)  # SIGKILL unless it ended
    instants.mark("killed" if finished.returncode == -9
                  else f"exit {finished.returncode}")
    return {"planned_ms": round(after_s * 1000, 3), "at_ms": round(lived * 1000, 3),
            "returncode": finished.returncode}


def killed_recovery(harness, spec: Intervention, db: Path, instants,
                    moments: Moments) -> list[dict]:
    """Replacements killed at ``instants`` (seconds after each start), one
    after another, each followed by a snapshot of both files."""
    attempts = []
    for after_s in instants:
        attempt = kill_at_instant(harness, worker_args(db, spec.retry), after_s,
                                  moments)
        attempts.append(attempt | {"snapshot": durable(db)})
    return attempts


def run_trial(harness: Harness, directory: Path, spec: Intervention,
              repetition: int, instants: tuple[float, ...] = ()) -> dict:
    """One trial in its own fresh database; every field observed, none assumed.
    ``instants``: when to kill each replacement before the last (seconds)."""
    db = fresh_database(directory, spec, repetition)
    t0 = monotonic()

    def clock() -> float:
        return round((monotonic() - t0) * 1000, 3)

    first = {"interrupted_pid": None, "interrupted_returncode": None,
             "snapshot_at_interruption": None, "moments": {}}
    wall = Moments()  # these and every replacement's, on the wall clock: the picture
    if spec.boundary is not None:
        first = interrupt(harness, spec, db, clock, wall)
    recovery = killed_recovery(harness, spec, db, instants, wall)
    moments = first.pop("moments") | {"resumed_started": clock()}
    wall.mark("start")
    resumed = harness.run(worker_args(db, spec.retry), experiment.TIMEOUT)
    moments["resumed_exit"] = clock()
    wall.mark(f"exit {resumed.returncode}")
    trial = {
        "intervention": spec.name, "role": spec.role, "repetition": repetition,
        "boundary": spec.boundary, "revoked": spec.revoke, **first,
        "recovery_killed": recovery,
        "resumed_pid": resumed.pid, "resumed_returncode": resumed.returncode,
        "final_snapshot": durable(db), "expected_payments": spec.expected_payments,
        "exact": spec.exact, "timeline_ms": moments, "moments": wall,
        "elapsed_ms": clock(),
    }
    return trial | grade(spec, trial)


def identity(spec: Intervention, repetition: int) -> dict:
    """What a trial the harness could not complete records: it fails the run,
    with nothing detected."""
    return {"intervention": spec.name, "role": spec.role, "repetition": repetition,
            "boundary": spec.boundary, "expected_payments": spec.expected_payments,
            "detected": False}


def lifetime(harness: Harness, directory: Path, spec: Intervention) -> dict:
    """How long a replacement lives on this machine, now, in ``spec``'s
    situation (its worker killed at its boundary, a replacement run to its
    end): the span its random instants are drawn from, so that they fall
    within the life they are meant to cut short."""
    db = fresh_database(directory, spec._replace(name=f"span-{spec.name}"), 0)
    interrupt(harness, spec, db, monotonic, Moments())
    started = monotonic()
    harness.run(worker_args(db, spec.retry), experiment.TIMEOUT)
    return {"span_s": monotonic() - started}


def run_study(repetitions: int, seed: int = 2) -> tuple[list[dict], dict]:
    """Every intervention x ``repetitions``, each in a fresh database; and,
    per recovery-killed intervention, the span (seconds) its kills were drawn
    over."""
    killing = [spec for spec in INTERVENTIONS if spec.recovery_kills]
    measured = experiment.run_trials(
        [experiment.Trial(f"span {spec.name}", {}, (spec,)) for spec in killing],
        lifetime, progress=False)
    if failed := [m["error"] for m in measured if "error" in m]:
        # no span, no instants: nothing to study
        raise RuntimeError(f"a replacement's run failed: {failed[0]}")
    spans = {spec.name: m["span_s"] for spec, m in zip(killing, measured, strict=True)}
    rng = random.Random(seed)
    plan = [experiment.Trial(f"{spec.name} #{repetition}",
                             identity(spec, repetition),
                             (spec, repetition, tuple(
                                 rng.random() * spans[spec.name]
                                 for _ in range(spec.recovery_kills))))
            for repetition in range(1, repetitions + 1) for spec in INTERVENTIONS]
    return experiment.run_trials(plan, run_trial), spans


def summarize(trials: list[dict]) -> dict:
    """Per intervention and overall, counted from the graded trials."""
    per = {}
    for spec in INTERVENTIONS:
        mine = [t for t in trials if t["intervention"] == spec.name]
        per[spec.name] = {
            "role": spec.role, "trials": len(mine),
            "expected_payments": spec.expected_payments,
            "observed_payments": [t.get("final_snapshot", {}).get("payments")
                                  for t in mine],
            "held": sum(t["holds"] for t in mine),
            "detected": sum(t["detected"] for t in mine),
        }
    reference = [t for t in trials if t["role"] == "reference"]
    mutant = [t for t in trials if t["role"] == "mutant"]
    return {
        "trials": len(trials),
        "reference_held": sum(t["holds"] for t in reference),
        "reference_trials": len(reference),
        "mutant_held": sum(t["holds"] for t in mutant),
        "mutant_detected": sum(t["detected"] for t in mutant),
        "mutant_trials": len(mutant),
        "mutant_resumed_returncodes": [t.get("resumed_returncode") for t in mutant],
        "holds": bool(trials) and all(t["holds"] for t in trials),
        "interventions": per,
    }


def run(args) -> tuple[dict, list[dict]]:
    repetitions = 1 if args.quick else args.repetitions
    trials, spans = run_study(repetitions, args.seed)
    return summarize(trials) | {
        "repetitions": repetitions, "seed": args.seed,
        "recovery_kills": RECOVERY_KILLS,
        "span_ms": {name: round(span * 1000, 3) for name, span in spans.items()},
        "replacements_killed": sum(a["returncode"] == -9 for t in trials
                                   for a in t.get("recovery_killed", ())),
        "replacements_given_an_instant": sum(len(t.get("recovery_killed", ()))
                                             for t in trials)}, trials


main = experiment.script(
    __file__, evidence_id=EVIDENCE_ID, run=run, parser=experiment.command_line(
        __doc__, count="repetitions", default=3,
        count_help="repetitions of every intervention",
        quick_help="one repetition, what the test suite runs", seed=2))

if __name__ == "__main__":
    sys.exit(main())
