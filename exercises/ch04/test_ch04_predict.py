"""Grades exercise 04.1 (predict.py) against real workers and real SIGKILL."""

import json

import pytest

from crashcourse.budget import budget_snapshot
from crashcourse.harness import Harness
from crashcourse.services import payments

TIMEOUT = 20.0


def args(service, state, key):
    return ["-m", "crashcourse.workers.charge", "--payments", str(service),
            "--state", str(state), "--task", key, "--key", key, "--order", "PO-1",
            "--amount", "4000", "--currency", "USD"]


def said(finished):
    report = json.loads(finished.stdout.strip().splitlines()[-1])
    return report.get("reason", report["outcome"])


def observe(service, state, boundary):
    """Run the experiment; every count comes from the payment service's file."""
    payments.install(service, max_actions=1, currency_caps={"USD": 4000})
    payments.approve(service, "PO-1", 4000, "USD")
    with Harness() as harness:
        worker = harness.start(args(service, state, "k1"), stop_at=boundary)
        worker.wait_for_boundary(TIMEOUT)
        assert worker.kill().returncode == -9
        at_kill = budget_snapshot(service)
        paid_at_kill = len(payments.snapshot(service)["payments"])
        replacement = said(harness.run(args(service, state, "k1"), TIMEOUT))
        fresh = said(harness.run(args(service, state, "k2"), TIMEOUT))
    return {"payments_at_kill": paid_at_kill,
            "charged_at_kill": at_kill["charged_actions"],
            "replacement": replacement, "fresh_key": fresh,
            "payments_final": len(payments.snapshot(service)["payments"])}


@pytest.mark.parametrize("boundary", ["payment_inserted", "after_payment"])
def test_prediction_matches_the_ledger(answer, tmp_path, boundary):
    predicted = answer("ch04", "predict").predict(boundary)
    assert predicted == observe(tmp_path / "payments.db", tmp_path / "worker.db",
                                boundary)
