"""Grades exercise 02.1 (resume.py) against real workers killed with SIGKILL."""

from __future__ import annotations

import pytest

from crashcourse import payments
from crashcourse.harness import Harness
from crashcourse.workers import pay_invoice

TASK, ORDER, AMOUNT, CURRENCY = "restock-1", "PO-1001", 4000, "USD"
KEY = pay_invoice.payment_key(TASK, ORDER, AMOUNT, CURRENCY)


@pytest.fixture
def mod(answer):
    return answer("ch02", "resume")


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "payments.db"
    payments.initialize(path)
    payments.approve(path, ORDER, AMOUNT, CURRENCY)
    return path


def worker(db) -> list[str]:
    return ["-m", "crashcourse.workers.pay_invoice", "--db", str(db),
            "--task", TASK, "--order", ORDER, "--amount", str(AMOUNT),
            "--currency", CURRENCY]


def kill_at(db, boundary: str) -> None:
    """Run the reference worker until ``boundary`` and SIGKILL it there."""
    with Harness() as harness:
        started = harness.start(worker(db), stop_at=boundary)
        started.wait_for_boundary(timeout=10)
        assert started.kill().returncode == -9


def rows(db) -> tuple[list[dict], list[dict]]:
    snap = payments.snapshot(db)
    return snap["payments"], snap["checkpoints"]


def resume(mod, db) -> str:
    return mod.resume_payment(db, TASK, ORDER, AMOUNT, CURRENCY)


def test_killed_after_payment_reconciles_without_a_second_charge(mod, db):
    kill_at(db, "after_payment")
    assert resume(mod, db) == "already_committed"
    paid, checkpoints = rows(db)
    assert len(paid) == 1
    assert [(c["key"], c["outcome"]) for c in checkpoints] == [
        (paid[0]["key"], "already_committed")
    ]


def test_killed_before_payment_pays_once_under_the_workers_key(mod, db):
    kill_at(db, "before_payment")
    assert resume(mod, db) == "committed"
    paid, checkpoints = rows(db)
    assert [p["key"] for p in paid] == [KEY]
    assert [c["key"] for c in checkpoints] == [KEY]


def test_a_finished_task_is_left_alone(mod, db):
    with Harness() as harness:
        assert harness.run(worker(db), timeout=10).returncode == 0
    before = payments.snapshot(db)
    assert resume(mod, db) == "committed"  # what the checkpoint recorded
    assert payments.snapshot(db) == before


def test_resuming_twice_still_pays_once(mod, db):
    kill_at(db, "after_payment")
    first, second = resume(mod, db), resume(mod, db)
    assert (first, second) == ("already_committed", "already_committed")
    assert len(rows(db)[0]) == 1


def test_revoked_before_payment_refuses_and_records_nothing(mod, db):
    payments.revoke(db, ORDER)
    with pytest.raises(payments.ApprovalRefused):
        resume(mod, db)
    assert rows(db) == ([], [])


def test_revoked_after_payment_still_finishes_the_history(mod, db):
    payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY)  # the dead worker's
    payments.revoke(db, ORDER)
    assert resume(mod, db) == "already_committed"
    paid, checkpoints = rows(db)
    assert len(paid) == 1 and len(checkpoints) == 1
