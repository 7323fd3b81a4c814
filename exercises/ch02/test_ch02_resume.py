"""Grades exercise 02.1 (resume.py) against real workers killed with SIGKILL."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from crashcourse.lab.harness import Harness
from crashcourse.services import payments
from crashcourse.store import immediate, opened
from crashcourse.workers import pay_invoice, paying

TASK, ORDER, AMOUNT, CURRENCY = "restock-1", "PO-1001", 4000, "USD"
KEY = pay_invoice.payment_key(TASK, ORDER, AMOUNT, CURRENCY)


# The worker's own resume, which chapter 00 prints: calling it (or its pay
# step) hands in the reference's answer, not the reader's. Each is replaced,
# before the answer is loaded (so an import of it gets the replacement too),
# by a function that refuses, here and in the child process that runs it.
WORKERS_OWN = ("crashcourse.workers.pay_invoice:pay_task",
               "crashcourse.workers.pay_invoice:main",
               "crashcourse.workers.payment_command:pay_under",
               "crashcourse.workers.payment_command:run",
               "crashcourse.workers.paying:pay_then_checkpoint")
FORBID = f"""
import importlib


def forbid_the_workers_own(put):
    \"\"\"Replace each of WORKERS_OWN with a refusal (``put``: setattr, or
    monkeypatch's); the list of those the answer called.\"\"\"
    called = []
    for name in {WORKERS_OWN!r}:
        def refused(*args, _name=name, **kwargs):
            called.append(_name)
            raise AssertionError(f"{{_name}} is the worker's own answer to this"
                                 " exercise: write resume_payment from"
                                 " payments.issue_payment, pay_invoice.payment_key"
                                 " and paying's checkpoint calls")
        module, function = name.split(":")
        put(importlib.import_module(module), function, refused)
    return called
"""
exec(FORBID)  # defines forbid_the_workers_own here too


@pytest.fixture
def mod(answer, monkeypatch):
    """The answer, loaded with the worker's own resume refused; a call that
    reached it fails, whatever the answer did with the refusal."""
    called = forbid_the_workers_own(monkeypatch.setattr)  # noqa: F821 (exec)
    loaded = answer("ch02", "resume")

    def resume_payment(*args):
        try:
            return loaded.resume_payment(*args)
        finally:
            assert not called, f"the answer called {called[0]}"

    return SimpleNamespace(resume_payment=resume_payment, __file__=loaded.__file__)


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
        killed = started.kill().returncode
        assert killed == -9, (
            "the grader's world, not your answer: the reference worker was to"
            f" die by SIGKILL at {boundary}, and ended with {killed}")


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
    said = resume(mod, files)
    assert said == "already_committed", (
        "killed after its payment, the task was not reconciled with the"
        " service: the payment must be offered again under the worker's own"
        f" derived key, which the service already has; answered {said!r}")
    paid, checkpoints = rows(files)
    assert len(paid) == 1, (
        "the supplier was charged a second time after a kill after payment:"
        f" a key minted now is one the service never saw; {len(paid)} payments")
    kept = [(c["key"], c["outcome"]) for c in checkpoints]
    assert kept == [(paid[0]["key"], "already_committed")], (
        "the checkpoint does not record the payment's key as already_committed:"
        f" {kept}")


def test_killed_before_payment_pays_once_under_the_workers_key(mod, files):
    kill_at(files, "before_payment")
    said = resume(mod, files)
    assert said == "committed", (
        f"killed before its payment, the task was not paid: answered {said!r},"
        " not 'committed'")
    paid, checkpoints = rows(files)
    keys = [p["key"] for p in paid]
    assert keys == [KEY], (
        "the payment was not made once under the worker's derived key"
        " (pay_invoice.payment_key), which any other process can recompute:"
        f" payment keys {keys}, not [{KEY!r}]")
    keys = [c["key"] for c in checkpoints]
    assert keys == [KEY], (
        f"the checkpoint does not name the derived key: {keys}, not [{KEY!r}]")


def test_a_finished_task_is_left_alone(mod, files):
    with Harness() as harness:
        ran = harness.run(worker(files), timeout=10).returncode
        assert ran == 0, (
            "the grader's world, not your answer: the reference worker was to"
            f" finish the task, and exited {ran}")
    before = paying.snapshot(files.service, files.state)
    said = resume(mod, files)
    assert said == "already_committed", (
        "a finished task was not answered from its checkpoint:"
        f" answered {said!r}, not 'already_committed'")
    after = paying.snapshot(files.service, files.state)
    assert after == before, (
        "resuming a finished task changed the files: its checkpoint must be"
        " read first and the task left alone (not asked again, not"
        f" rewritten); before {before}, after {after}")


def test_killed_after_its_checkpoint_the_task_is_left_alone(mod, files):
    kill_at(files, "after_checkpoint")
    before = paying.snapshot(files.service, files.state)
    outcomes = [c["outcome"] for c in before["checkpoints"]]
    assert outcomes == ["committed"], (
        "the grader's world, not your answer: the worker killed after its"
        f" checkpoint was to leave one 'committed', not {outcomes}")
    said = resume(mod, files)
    assert said == "already_committed", (
        "a task killed after its checkpoint was not answered from that"
        f" checkpoint: answered {said!r}, not 'already_committed'")
    after = paying.snapshot(files.service, files.state)
    assert after == before, (
        "resuming a checkpointed task changed the files: the task must be left"
        f" alone; before {before}, after {after}")


def forget_keys(service):
    """What a real provider does after its retention window (Stripe may
    remove a key once it is 24 hours old): the charges stay, their
    idempotency keys are no longer known. Here the key column is the
    idempotency key, so the rows move to another name."""
    with opened(service) as conn, immediate(conn):
        conn.execute("PRAGMA defer_foreign_keys = ON")
        for table in ("payments", "payment_evidence"):
            conn.execute(f"UPDATE {table} SET key = 'forgotten:' || key")


def test_a_finished_task_is_not_paid_again_after_the_service_forgot_its_key(
        mod, files):
    with Harness() as harness:
        ran = harness.run(worker(files), timeout=10).returncode
        assert ran == 0, (
            "the grader's world, not your answer: the reference worker was to"
            f" finish the task, and exited {ran}")
    forget_keys(files.service)
    resume(mod, files)
    paid = rows(files)[0]
    assert len(paid) == 1, (
        "a finished task was paid a second time once the service forgot its"
        " key: the checkpoint must be read before the service is asked;"
        f" {len(paid)} payments")


def test_other_tasks_in_the_workers_file_are_not_touched(mod, files):
    """The worker's file holds every task it ran; only this one is resumed."""
    with opened(files.state) as state:
        paying.save_checkpoint(state, "restock-0", "restock-0/key", "committed")
    kill_at(files, "after_payment")
    said = resume(mod, files)
    assert said == "already_committed", (
        "with another task's checkpoint in the worker's file, this task was"
        f" not reconciled: answered {said!r}, not 'already_committed'")
    with opened(files.state) as state:
        by_task = {c["task"]: c for c in paying.checkpoints(state)}
    other = by_task.get("restock-0")
    assert other == {"task": "restock-0", "key": "restock-0/key",
                     "outcome": "committed"}, (
        "another task's checkpoint was changed: only this task's row may be"
        f" read and written; restock-0 is now {other}")
    ours = by_task.get(TASK, {}).get("key")
    assert ours == KEY, (
        f"this task's checkpoint does not name the derived key: {ours!r},"
        f" not {KEY!r}")


CHILD = FORBID + """
forbid_the_workers_own(setattr)
import importlib.util, sys
from crashcourse.store import immediate, opened
path, service, state, task, order, amount, currency = sys.argv[1:]
spec = importlib.util.spec_from_file_location("answer", path)
answer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(answer)
with opened(state) as conn:
    print(answer.resume_payment(service, conn, task, order, int(amount), currency))
"""


def test_a_resume_killed_inside_its_charge_is_resumed_again(mod, files):
    """Recovery dies too: the replacement, run as a process of its own, is
    killed inside the service's charge (inserted, not committed), and a third
    process resumes."""
    kill_at(files, "before_payment")
    args = ["-c", CHILD, mod.__file__, str(files.service), str(files.state),
            TASK, ORDER, str(AMOUNT), CURRENCY]
    with Harness() as harness:
        started = harness.start(args, stop_at="payment_inserted")
        started.wait_for_boundary(timeout=10)
        killed = started.kill().returncode
        assert killed == -9, (
            "the grader's world, not your answer: the resuming process was to"
            f" die by SIGKILL inside its charge, and ended with {killed}")
    found = rows(files)
    assert found == ([], []), (  # the charge died uncommitted
        "a resume killed inside its uncommitted charge left rows behind:"
        f" (payments, checkpoints) = {found}")
    said = resume(mod, files)
    assert said == "committed", (
        "after a resume died inside its charge, the next resume did not pay:"
        f" answered {said!r}, not 'committed'")
    paid, checkpoints = rows(files)
    keys = [p["key"] for p in paid]
    assert keys == [KEY], (
        "the third process did not pay once under the derived key:"
        f" payment keys {keys}, not [{KEY!r}]")
    keys = [c["key"] for c in checkpoints]
    assert keys == [KEY], (
        f"the checkpoint does not name the derived key: {keys}, not [{KEY!r}]")


def test_resuming_twice_still_pays_once(mod, files):
    kill_at(files, "after_payment")
    first, second = resume(mod, files), resume(mod, files)
    assert (first, second) == ("already_committed", "already_committed"), (
        "two resumes of a task killed after payment did not both answer"
        f" already_committed: answered {first!r}, then {second!r}")
    paid = rows(files)[0]
    assert len(paid) == 1, (
        f"resuming twice charged again: {len(paid)} payments, not 1")


def test_revoked_before_payment_refuses_and_records_nothing(mod, files):
    payments.revoke(files.service, ORDER)
    with pytest.raises(payments.ApprovalRefused):
        said = resume(mod, files)
        pytest.fail("the service refused the revoked approval and the caller did not"
                    f" hear it: resume answered {said!r} instead of raising"
                    " ApprovalRefused")
    found = rows(files)
    assert found == ([], []), (
        "a refused approval still left a payment or a checkpoint: nothing may"
        f" be recorded when the service refuses; (payments, checkpoints) = {found}")


def test_revoked_after_payment_still_finishes_the_history(mod, files):
    # the dead worker's charge, committed before it could checkpoint
    payments.issue_payment(files.service, KEY, ORDER, AMOUNT, CURRENCY)
    payments.revoke(files.service, ORDER)
    said = resume(mod, files)
    assert said == "already_committed", (
        "a charge committed before the approval was revoked was not"
        " reconciled: the history must be finished from the service's answer"
        f" for the derived key; answered {said!r}")
    paid, checkpoints = rows(files)
    assert len(paid) == 1 and len(checkpoints) == 1, (
        "after a revoked approval the task does not hold one payment and one"
        f" checkpoint: {len(paid)} payments, {len(checkpoints)} checkpoints")
