"""The payment workers (chapters 00-04): one sequence, one exit-code table, the
checkpoint in the worker's own file."""

from __future__ import annotations

import json
import subprocess
import sys

from crashcourse.services import payments
from crashcourse.store import immediate, opened
from crashcourse.workers import paying

ORDER, AMOUNT, CURRENCY = "SUP-0042", 4000, "USD"


def run(worker, db, *extra, amount=AMOUNT):
    state = db.with_name("worker.sqlite")
    args = [sys.executable, "-m", f"crashcourse.workers.{worker}",
            "--payments", str(db), "--state", str(state), "--task", "restock-0042",
            "--order", ORDER, "--amount", str(amount), "--currency", CURRENCY, *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def pay(db, *extra):
    return run("pay_invoice", db, *extra)


def worker_checkpoints(db):
    with opened(db.with_name("worker.sqlite")) as state:
        return paying.checkpoints(state)


def test_a_locked_database_ends_in_a_busy_report_and_no_charge(tmp_path):
    db = tmp_path / "payments.sqlite"
    payments.install(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    with opened(db) as holder, immediate(holder):  # another writer holds the lock
        busy = pay(db, "--busy-timeout-ms", "100")
    assert busy.returncode == paying.EXITS["busy"], busy.stderr
    assert "Traceback" not in busy.stderr
    assert json.loads(busy.stdout)["outcome"] == "busy"
    assert payments.snapshot(db)["payments"] == []
    again = pay(db)  # the lock is gone: the same key pays exactly once
    assert again.returncode == 0, again.stderr
    assert len(payments.snapshot(db)["payments"]) == 1
    assert [row["task"] for row in worker_checkpoints(db)] == ["restock-0042"]


def test_both_workers_share_one_exit_table_and_checkpoint_after_success(tmp_path):
    db = tmp_path / "payments.sqlite"
    payments.install(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    first = run("charge", db, "--key", "k-1")
    assert (first.returncode, json.loads(first.stdout)["outcome"]) == (0, "committed")
    replay = run("charge", db, "--key", "k-1")
    assert json.loads(replay.stdout)["outcome"] == "already_committed"
    assert replay.returncode == 0
    conflict = run("charge", db, "--key", "k-1", amount=AMOUNT + 1)
    assert conflict.returncode == paying.EXITS["conflict"] == 4, conflict.stderr
    refused = run("charge", db, "--key", "k-2", amount=AMOUNT + 1)
    assert refused.returncode == paying.EXITS["refused"] == 3, refused.stderr
    assert json.loads(refused.stdout)["reason"] == "not_approved"
    assert "Traceback" not in conflict.stderr + refused.stderr
    assert len(payments.snapshot(db)["payments"]) == 1
    # only the two answers that mean "paid" were checkpointed, under the key paid
    assert [(r["key"], r["outcome"]) for r in worker_checkpoints(db)] == [
        ("k-1", "already_committed")]
