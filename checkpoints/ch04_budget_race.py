"""The allowance beside the effect (chapter 04): races and kills against a budget.

    python checkpoints/ch04_budget_race.py --output PATH [--repetitions N | --quick]

Race (each repetition, a NEW payment database): a budget of 2 payments and
8000 USD cents, one payment already committed, so ONE unit is left. Two real
``charge`` workers with different keys are held at ``before_payment`` until
both have arrived, then released together. Exactly one may commit: its key
has a payment in the service's file and its task a checkpoint in the
assistant's own file; the other has neither.

Its negative control, ``race_read_first``: the same race run by the mutant
``charge_read_first``, which counts the budget BEFORE it takes the write
lock, its racers held at the SAME barrier (``before_payment``) and released
together. Nothing holds them in the mutant's gap (counted, lock not yet
taken): the race lands there only when the two really overlap, so this shows
that the reference's racers overlapped too. A mutant trial holds when its rows
agree with each other, whether both racers paid (three payments on a budget
of two, one unit and 4000 cents over) or the first locked before the second
counted (one paid, as in the reference); the control is LOST, and the run
fails, unless at least one mutant race paid twice.

Kills (real SIGKILL, a budget of one payment):

* ``kill_before_commit``: at ``payment_inserted``, inside the payment
  transaction after the INSERT: no payment and no consumption may remain, and
  the restarted worker commits the payment with the unit it still has.
* ``kill_after_commit``: at ``after_payment``, before the worker's checkpoint:
  one payment, consumed; the exact replay consumes nothing more, and a fresh
  key is refused because the allowance is spent (the refusal's reason must be
  ``budget_action_limit``, and no payment may appear).

Each race runs ``--repetitions`` times (default 20; ``--quick``: four times), the
kills once each. Every count is read from the payment database
(``budget_snapshot`` and the rows); exit statuses and the workers' printed
reports are recorded, never counted.
Exit 0 only when every trial holds, else 1; exit 2 for bad arguments or an
``--output`` that exists or cannot be written (refused before anything runs).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from crashcourse.lab import experiment
from crashcourse.lab.harness import Harness, Moments
from crashcourse.services import payments
from crashcourse.services.payments.budget import budget_snapshot
from crashcourse.store import opened
from crashcourse.workers import paying

EVIDENCE_ID = "crashcourse.ch04.budget_race/1"
WORKER = ("-m", "crashcourse.workers.charge")
# Each race's worker and the boundary its racers are held at together.
RACES = {"race": (WORKER, "before_payment"),
         "race_read_first": (("-m", "crashcourse.workers.charge_read_first"),
                             "before_payment")}  # the same barrier
AMOUNT, CURRENCY = 4000, "USD"
QUICK_REPETITIONS = 4  # the control pays twice in ~9 of 10 races: 0 of 4 ~ 1e-4
RACERS = ("racer-a", "racer-b")


def worker_args(db: Path, task: str, key: str, order: str,
                worker: tuple = WORKER) -> list[str]:
    return [*worker, "--payments", str(db), "--state", str(worker_file(db)),
            "--task", task, "--key", key, "--order", order,
            "--amount", str(AMOUNT), "--currency", CURRENCY]


def worker_file(db: Path) -> Path:
    """The assistant's own file (its checkpoints), beside the service's file.
    Both racers are processes of the one assistant, so they share it."""
    return db.with_name(f"{db.stem}-worker.sqlite")


def ledger(db: Path) -> dict:
    """Payments by key, the tasks checkpointed in the assistant's file, and the
    allowance, all from durable rows."""
    rows = paying.snapshot(db, worker_file(db))
    return {"keys": sorted(p["key"] for p in rows["payments"]),
            "checkpoints": len(rows["checkpoints"]),
            "checkpointed_tasks": sorted(c["task"] for c in rows["checkpoints"]),
            "budget": budget_snapshot(db)}


def reported(finished) -> dict:
    """A worker's own report, its last line: recorded, compared, never counted."""
    lines = finished.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        return {}


def judge_race(final: dict) -> tuple[list[str], list[str], dict]:
    """The winners, the racers that never finished, and the checks of a race.

    Two files, two answers: the service's payments say who won, the
    assistant's checkpoints say who finished; a refusal writes neither."""
    won = [r for r in RACERS if f"pay-{r}" in final["keys"]]
    unfinished = [r for r in RACERS if r not in final["checkpointed_tasks"]]
    checks = {
        "exactly_one_racer_committed": len(won) == 1,
        "only_the_winner_checkpointed": unfinished == [r for r in RACERS
                                                       if r not in won],
        "two_payments_in_all": len(final["keys"]) == 2,
        "no_remaining_actions": final["budget"]["remaining_actions"] == 0,
        "within_cents_cap": final["budget"]["remaining_cents"][CURRENCY] >= 0,
    }
    return won, unfinished, checks


def judge_mutant_race(final: dict) -> tuple[list[str], list[str], dict]:
    """The mutant's rows, consistent either way: every racer that paid
    finished and the others did not, one payment per paying racer beside the
    earlier one, and the budget charged for each (over it when both paid)."""
    won = [r for r in RACERS if f"pay-{r}" in final["keys"]]
    unfinished = [r for r in RACERS if r not in final["checkpointed_tasks"]]
    remaining = final["budget"]["remaining_cents"][CURRENCY]
    checks = {
        "at_least_one_racer_committed": len(won) >= 1,
        "only_the_payers_checkpointed": unfinished == [r for r in RACERS
                                                       if r not in won],
        "one_payment_per_payer": len(final["keys"]) == 1 + len(won),
        "every_payment_charged": final["budget"]["remaining_actions"] == 1 - len(won),
        "cents_charged": remaining == (1 - len(won)) * AMOUNT,
    }
    return won, unfinished, checks


def race(harness: Harness, folder: Path, name: str, repetition: int) -> dict:
    """One race for the last unit: ``name`` picks the worker and its barrier."""
    worker, barrier = RACES[name]
    db = folder / "payments.db"
    payments.install(db, max_actions=2, currency_caps={CURRENCY: 2 * AMOUNT})
    for order in ("PO-4000", *RACERS):
        payments.approve(db, order, AMOUNT, CURRENCY)
    payments.issue_payment(db, "pay-earlier", "PO-4000", AMOUNT, CURRENCY)
    # The assistant's file exists before its racers start: two processes that
    # both create a new SQLite file can collide switching it to WAL, and one
    # then dies of "database is locked" before it reaches its boundary.
    with opened(worker_file(db)) as conn:
        paying.install(conn)
    moments = Moments()  # the parent's instants, for the picture
    workers = [harness.start(worker_args(db, r, f"pay-{r}", r, worker), barrier)
               for r in RACERS]
    for r, held in zip(RACERS, workers, strict=True):  # the barrier: both wait...
        held.wait_for_boundary(experiment.TIMEOUT)
        moments.mark(f"{r} at {barrier}")
    for held in workers:  # ...and go together
        held.release()
    moments.mark("both released")
    finished = {}
    for r, held in zip(RACERS, workers, strict=True):
        finished[r] = held.finish(experiment.TIMEOUT)  # reaped: it exited by now
        moments.mark(f"{r} exit {finished[r].returncode}")
    final = ledger(db)
    judge = judge_race if name == "race" else judge_mutant_race
    won, unfinished, checks = judge(final)
    return {"trial": name, "repetition": repetition, "barrier": barrier,
            "committed": len(won), "refused": len(unfinished), "winner": won,
            "exit_statuses": {r: done.returncode for r, done in finished.items()},
            "reports": {r: reported(done) for r, done in finished.items()},
            "final": final, "moments": moments, "checks": checks,
            "holds": all(checks.values())}


def kill_trial(harness: Harness, folder: Path, name: str, boundary: str) -> dict:
    db = folder / "payments.db"
    payments.install(db, max_actions=1, currency_caps={CURRENCY: AMOUNT})
    payments.approve(db, "PO-4101", AMOUNT, CURRENCY)
    args = worker_args(db, "restock-4", "pay-4101", "PO-4101")
    moments = Moments()  # the parent's instants, for the picture
    worker = harness.start(args, stop_at=boundary)
    worker.wait_for_boundary(experiment.TIMEOUT)
    moments.mark(f"at {boundary}")
    killed = worker.kill()
    moments.mark("killed")
    at_kill = ledger(db)
    moments.mark("start")
    resumed = harness.run(args, experiment.TIMEOUT)
    moments.mark(f"exit {resumed.returncode}")
    after_resume = ledger(db)
    moments.mark("fresh key starts")
    fresh = harness.run(worker_args(db, "restock-5", "pay-4101-b", "PO-4101"),
                        experiment.TIMEOUT)
    moments.mark(f"fresh key: {reported(fresh).get('reason', fresh.returncode)}")
    final = ledger(db)
    fresh_report = reported(fresh)
    checks = judge_kill(boundary, killed.returncode, at_kill, after_resume,
                        fresh_report, final)
    return {"trial": name, "kill_at": boundary, "committed": len(final["keys"]),
            "interrupted_returncode": killed.returncode,
            "exit_statuses": {"replacement": resumed.returncode,
                              "fresh_key": fresh.returncode},
            "fresh_key_report": fresh_report,
            "at_kill": at_kill, "after_resume": after_resume, "final": final,
            "moments": moments, "checks": checks, "holds": all(checks.values())}


def judge_kill(boundary: str, killed_rc: int, at_kill: dict, after_resume: dict,
               fresh_report: dict, final: dict) -> dict:
    """The checks of a kill trial, from the three ledgers and the fresh key's
    reported reason (a budget of one payment, so the fresh key must find the
    unit spent)."""
    paid_at_kill = int(boundary == "after_payment")
    return {
        "killed_with_sigkill": killed_rc == -9,
        "payments_at_kill": len(at_kill["keys"]) == paid_at_kill,
        "consumption_at_kill": at_kill["budget"]["charged_actions"] == paid_at_kill,
        "one_payment_after_resume": after_resume["keys"] == ["pay-4101"],
        "one_unit_consumed": after_resume["budget"]["charged_actions"] == 1,
        "checkpoint_after_resume": after_resume["checkpoints"] == 1,
        # refused for the budget, and nothing new in the rows
        "fresh_key_refused_by_budget": fresh_report.get("reason")
        == "budget_action_limit" and final["keys"] == ["pay-4101"],
    }


KILLS = {"kill_before_commit": "payment_inserted", "kill_after_commit": "after_payment"}


def run_one(harness: Harness, folder: Path, name: str, *more) -> dict:
    """A kill trial or a race, by its name, in a new payment database."""
    return (kill_trial if name in KILLS else race)(harness, folder, name, *more)


def plan(n: int) -> list[experiment.Trial]:
    """The two kill trials, then ``n`` races of each kind."""
    kills = [experiment.Trial(name, {"trial": name}, (name, boundary))
             for name, boundary in KILLS.items()]
    return kills + [experiment.Trial(f"{name} #{i}", {"trial": name, "repetition": i},
                                     (name, i))
                    for name in RACES for i in range(n)]


def run(args) -> tuple[dict, list[dict]]:
    n = QUICK_REPETITIONS if args.quick else args.repetitions
    trials = experiment.run_trials(plan(n), run_one)
    two = {name: sum(t.get("committed", 0) > 1 for t in trials if t["trial"] == name)
           for name in RACES}
    if two["race_read_first"] == 0:  # the control lost nothing: no overlap shown
        for t in trials:
            if t["trial"] == "race_read_first":
                t["checks"]["some_mutant_race_paid_twice"] = False
                t["holds"] = False
    summary = {"trials": len(trials), "held": sum(t["holds"] for t in trials),
               "race_repetitions": n,
               "races_with_two_commits": two["race"],
               "read_first_races_with_two_commits": two["race_read_first"]}
    return summary, trials


main = experiment.script(
    __file__, evidence_id=EVIDENCE_ID, run=run, parser=experiment.command_line(
        __doc__, count="repetitions", default=20, count_help="race repetitions",
        quick_help=f"{QUICK_REPETITIONS} race repetitions, what the test suite runs"))

if __name__ == "__main__":
    sys.exit(main())
