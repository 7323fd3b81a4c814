"""The pay_invoice worker (chapters 00-02) when the payment database is locked."""

from __future__ import annotations

import json
import subprocess
import sys

from crashcourse import payments
from crashcourse.store import immediate, opened
from crashcourse.workers import pay_invoice

ORDER, AMOUNT, CURRENCY = "SUP-0042", 4000, "USD"


def pay(db, *extra):
    args = [sys.executable, "-m", "crashcourse.workers.pay_invoice", "--db", str(db),
            "--task", "restock-0042", "--order", ORDER, "--amount", str(AMOUNT),
            "--currency", CURRENCY, *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_a_locked_database_ends_in_a_busy_report_and_no_charge(tmp_path):
    db = tmp_path / "payments.sqlite"
    payments.initialize(db)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)
    with opened(db) as holder, immediate(holder):  # another writer holds the lock
        busy = pay(db, "--busy-timeout-ms", "100")
    assert busy.returncode == pay_invoice.BUSY_EXIT, busy.stderr
    assert "Traceback" not in busy.stderr
    assert json.loads(busy.stdout)["outcome"] == "busy"
    assert payments.snapshot(db)["payments"] == []
    again = pay(db)  # the lock is gone: the same key pays exactly once
    assert again.returncode == 0, again.stderr
    assert len(payments.snapshot(db)["payments"]) == 1
