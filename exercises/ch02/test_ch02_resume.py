"""Grades exercise 02.1 (resume.py) against real workers killed with SIGKILL."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from crashcourse.harness import Harness
from crashcourse.services import payments
from crashcourse.store import opened
from crashcourse.workers import pay_invoice, paying

TASK, ORDER, AMOUNT, CURRENCY = "restock-1", "PO-1001", 4000, "USD"
KEY = pay_invoice.payment_key(TASK, ORDER, AMOUNT, CURRENCY)


@pytest.fixture
def mod(answer):
    return answer("ch02", "resume")


@pytest.fixture
def files(tmp_path):
    """The payment service's file (approved) and the worker's own file, with
    the checkpoint table the worker installs when it starts."""
    service = tmp_path / "payments.db"
    payments.install(service)
    payments.approve(service, ORDER, AMOUNT, CURRENCY)
    state = tmp_path / "worker.db"
    with opened(state) as conn:
        paying.install(conn)
    return SimpleNamespace(service=service, state=state)


def worker(files) -> list[str]:
    return ["-m", "crashcourse.workers.pay_invoice",
            "--payments", str(files.service), "--state", str(files.state),
            "--task", TASK, "--order", ORDER, "--amount", str(AMOUNT),
            "--currency", CURRENCY]


def kill_at(files, boundary: str) -> None:
    """Run the reference worker until ``boundary`` and SIGKILL it there."""
    with Harness() as harness:
        started = harness.start(worker(files), stop_at=boundary)
        started.wait_for_boundary(timeout=10)
        assert started.kill().returncode == -9


def rows(files) -> tuple[list[dict], list[dict]]:
    """The service's payments and the worker's checkpoints, each from its file."""
    snap = paying.snapshot(files.service, files.state)
    return snap["payments"], snap["checkpoints"]


def resume(mod, files) -> str:
    """Run the answer as a replacement process would: a new connection to the
    worker's own file, the service by its path."""
    with opened(files.state) as state:
        return mod.resume_payment(files.service, state, TASK, ORDER, AMOUNT,
                                  CURRENCY)


def test_killed_after_payment_reconciles_without_a_second_charge(mod, files):
    kill_at(files, "after_payment")
    assert resume(mod, files) == "already_committed"
    paid, checkpoints = rows(files)
    assert len(paid) == 1
    assert [(c["key"], c["outcome"]) for c in checkpoints] == [
        (paid[0]["key"], "already_committed")
    ]


def test_killed_before_payment_pays_once_under_the_workers_key(mod, files):
    kill_at(files, "before_payment")
    assert resume(mod, files) == "committed"
    paid, checkpoints = rows(files)
    assert [p["key"] for p in paid] == [KEY]
    assert [c["key"] for c in checkpoints] == [KEY]


def test_a_finished_task_is_left_alone(mod, files):
    with Harness() as harness:
        assert harness.run(worker(files), timeout=10).returncode == 0
    before = paying.snapshot(files.service, files.state)
    assert resume(mod, files) == "committed"  # what the checkpoint recorded
    assert paying.snapshot(files.service, files.state) == before


def test_resuming_twice_still_pays_once(mod, files):
    kill_at(files, "after_payment")
    first, second = resume(mod, files), resume(mod, files)
    assert (first, second) == ("already_committed", "already_committed")
    assert len(rows(files)[0]) == 1


def test_revoked_before_payment_refuses_and_records_nothing(mod, files):
    payments.revoke(files.service, ORDER)
    with pytest.raises(payments.ApprovalRefused):
        resume(mod, files)
    assert rows(files) == ([], [])


def test_revoked_after_payment_still_finishes_the_history(mod, files):
    # the dead worker's charge, committed before it could checkpoint
    payments.issue_payment(files.service, KEY, ORDER, AMOUNT, CURRENCY)
    payments.revoke(files.service, ORDER)
    assert resume(mod, files) == "already_committed"
    paid, checkpoints = rows(files)
    assert len(paid) == 1 and len(checkpoints) == 1
