"""Authority and history (chapter 03): each authority change across a real restart.

    python checkpoints/ch03_authority.py --output PATH [--quick]

Each intervention gets a NEW payment database with one approved order (4000 cents, USD),
starts the real ``charge`` worker, SIGKILLs it at a registered boundary, changes
ONE thing while no worker runs (revoke the approval, let its wall-clock expiry
pass, move the service's policy version, or reuse the key with another amount or
currency), and starts a replacement with the same key. Where a payment already
committed, a third process then asks for a FRESH key: a new effect, which must
meet the current authority.

Expiry is real: after the kill the stored expiry is set 0.5 s ahead and the
parent waits for the wall clock to pass it. Grading reads two files: the
payment service's (the number of payments, the payment's amount and the terms
it was committed under) and the worker's own (its checkpoint); the counts
are taken by ``count(*)`` in a second read of each file, apart from the copy
of the rows kept beside them, so the two can be compared. The refusal
reason a worker prints is recorded and must match too, but no count comes
from it. ``--quick`` runs four of the nine interventions. The ninth,
``nothing_changed_before_payment``, is killed too (before its payment) but
nothing changes before the restart: the control.
Exit 0 only when every intervention holds, else 1; exit 2 for bad arguments or an
``--output`` that exists or cannot be written (refused before anything runs).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import NamedTuple

from crashcourse.lab import experiment
from crashcourse.lab.harness import Harness, Moments
from crashcourse.services import payments
from crashcourse.services.payments import authority
from crashcourse.waiting import wait_until
from crashcourse.workers import paying

EVIDENCE_ID = "crashcourse.ch03.authority/1"
TASK, ORDER, AMOUNT, CURRENCY, KEY = "restock-3", "PO-3001", 4000, "USD", "pay-3001"
WORKER = ("-m", "crashcourse.workers.charge")
EXPIRY_S = 0.5


class Intervention(NamedTuple):
    """Where to kill, what changes before the restart, what must remain."""

    name: str
    kill_at: str
    change: str  # revoke | expire | policy | amount | currency | none
    resumed: str  # the outcome the replacement must report
    payments: int  # committed payments afterwards
    fresh_key: str | None = None  # the outcome a fresh key must get, if asked


INTERVENTIONS = (  # name, kill at, change, the replacement's answer, payments,
    # and what a fresh key must then be told (None: not asked)
    Intervention("revoke_before_payment",
                 "before_payment", "revoke", "approval_revoked", 0, None),
    Intervention("revoke_after_payment",
                 "after_payment", "revoke", "already_committed", 1, "approval_revoked"),
    Intervention("expire_before_payment",
                 "before_payment", "expire", "approval_expired", 0, None),
    Intervention("expire_after_payment",
                 "after_payment", "expire", "already_committed", 1, "approval_expired"),
    Intervention("policy_before_payment",
                 "before_payment", "policy", "policy_changed", 0, None),
    Intervention("policy_after_payment",
                 "after_payment", "policy", "already_committed", 1, "policy_changed"),
    Intervention("amount_changed_after_payment",
                 "after_payment", "amount", "conflict", 1, None),
    Intervention("currency_changed_after_payment",
                 "after_payment", "currency", "conflict", 1, None),
    Intervention("nothing_changed_before_payment",
                 "before_payment", "none", "committed", 1, "committed"),
)
CHANGED = {"revoke": "approval revoked", "expire": "approval expired",
           "policy": "policy changed", "amount": "amount changed",
           "currency": "currency changed", "none": "nothing changed"}
QUICK = ("revoke_before_payment", "revoke_after_payment", "expire_before_payment",
         "policy_after_payment")


def worker_args(db: Path, key: str = KEY, amount=AMOUNT, currency=CURRENCY) -> list:
    return [*WORKER, "--payments", str(db), "--state", str(worker_file(db)),
            "--task", TASK, "--key", key, "--order", ORDER,
            "--amount", str(amount), "--currency", currency]


def change_authority(db: Path, change: str) -> dict:
    """Apply one change while no worker runs; say what was done."""
    if change == "revoke":
        payments.revoke(db, ORDER)
    elif change == "policy":
        authority.set_policy_version(db, 2)
    elif change == "expire":
        expires = time.time() + EXPIRY_S
        authority.set_expiry(db, ORDER, expires)
        wait_until(lambda: time.time() > expires, EXPIRY_S + experiment.TIMEOUT,
                   interval=0.05, what="the wall clock pass the stored expiry")
        return {"expiry": "set 0.5 s ahead, then waited until the clock passed it"}
    return {"change": change}


def reported(finished) -> dict:
    """The worker's own report: recorded, compared, never counted."""
    lines = finished.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def outcome_of(report: dict) -> str:
    return report.get("reason", report.get("outcome", "no report"))


def worker_file(db: Path) -> Path:
    """The worker's own file (its checkpoint), beside the service's file."""
    return db.with_name(f"{db.stem}-worker.sqlite")


def durable(db: Path) -> dict:
    """The rows of both files, the history of KEY, and the counts of a second
    read, to be compared with the rows."""
    state = worker_file(db)
    return {"rows": paying.snapshot(db, state),
            "history": authority.payment_history(db, KEY),
            **paying.recount(db, state)}


def run_case(harness: Harness, folder: Path, case: Intervention) -> dict:
    db = folder / "payments.db"
    payments.install(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    moments = Moments()  # the parent's instants, for the picture
    worker = harness.start(worker_args(db), stop_at=case.kill_at)
    worker.wait_for_boundary(experiment.TIMEOUT)
    moments.mark(f"at {case.kill_at}")
    killed = worker.kill()
    moments.mark("killed")
    at_kill = durable(db)
    change = change_authority(db, case.change)
    moments.mark(CHANGED[case.change])
    resume = {"amount": {"amount": AMOUNT + 100}, "currency": {"currency": "EUR"}}
    moments.mark("start")
    resumed = harness.run(worker_args(db, **resume.get(case.change, {})),
                          experiment.TIMEOUT)
    moments.mark(f"replacement: {outcome_of(reported(resumed))}")
    after_resume = durable(db)
    fresh, fresh_key = None, None
    if case.fresh_key:
        fresh_key = f"{KEY}-fresh"
        moments.mark("fresh key starts")
        fresh = reported(harness.run(worker_args(db, key=fresh_key),
                                     experiment.TIMEOUT))
        moments.mark(f"fresh key: {outcome_of(fresh)}")
    final = durable(db)
    return {"key": KEY, "fresh_key": fresh_key, "moments": moments} | grade(
        case, killed.returncode, at_kill, change, reported(resumed), after_resume,
        fresh, final)


def grade(case, killed_rc, at_kill, change, resumed, after_resume, fresh, final):
    history = final["history"]
    checks = {
        "killed_with_sigkill": killed_rc == -9,
        "payments_at_kill": at_kill["payments"] == (case.kill_at == "after_payment"),
        "no_checkpoint_at_kill": at_kill["checkpoints"] == 0,
        "resumed_outcome": outcome_of(resumed) == case.resumed,
        "payments_after_resume": after_resume["payments"] == case.payments,
        # the worker checkpoints only after the service said the payment exists
        "checkpoint_only_after_success": after_resume["checkpoints"]
        == (case.resumed in ("committed", "already_committed")),
        "fresh_key_outcome": case.fresh_key is None
        or outcome_of(fresh) == case.fresh_key,
        "fresh_key_adds_payment_only_if_allowed": final["payments"]
        == case.payments + (case.fresh_key == "committed"),
        "original_amount_kept": history is None
        or (history["amount_cents"], history["currency"]) == (AMOUNT, CURRENCY),
        "history_explains_payment": history is None or history["policy_version"] == 1,
    }
    return {"intervention": case.name, "kill_at": case.kill_at, "change": change,
            "interrupted_returncode": killed_rc, "resumed_report": resumed,
            "fresh_key_report": fresh, "snapshot_at_interruption": at_kill,
            "snapshot_after_resume": after_resume, "final_snapshot": final,
            "checks": checks, "holds": all(checks.values())}


def run(args) -> tuple[dict, list[dict]]:
    """Every intervention (four with ``--quick``), each in a new payment
    database."""
    cases = [experiment.Trial(c.name, {"intervention": c.name}, (c,))
             for c in INTERVENTIONS if not args.quick or c.name in QUICK]
    trials = experiment.run_trials(cases, run_case)
    return {"trials": len(trials), "held": sum(t["holds"] for t in trials)}, trials


main = experiment.script(
    __file__, evidence_id=EVIDENCE_ID, run=run, parser=experiment.command_line(
        __doc__, quick_help="four cases only, what the test suite runs"))

if __name__ == "__main__":
    sys.exit(main())
