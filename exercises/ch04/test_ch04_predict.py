"""Grades exercise 04.1 (predict.py) against real workers and real SIGKILL."""

import json

import pytest

from crashcourse.lab.harness import Harness
from crashcourse.services import payments

TIMEOUT = 20.0


def args(service, state, key, order):
    return ["-m", "crashcourse.workers.charge", "--payments", str(service),
            "--state", str(state), "--task", f"task-{key}", "--key", key,
            "--order", order, "--amount", "4000", "--currency", "USD"]


def said(finished):
    report = json.loads(finished.stdout.strip().splitlines()[-1])
    return report.get("reason", report["outcome"])


def observe(folder, boundary):
    """Run the experiment; every count comes from the payment service's file."""
    service = folder / "payments.db"
    payments.install(service, max_actions=1, currency_caps={"USD": 8000})
    for order in ("PO-A", "PO-B"):
        payments.approve(service, order, 4000, "USD")
    worker_a = args(service, folder / "a.db", "pay-a", "PO-A")
    with Harness() as harness:
        killed = harness.start(worker_a, stop_at=boundary)
        killed.wait_for_boundary(TIMEOUT)
        killed.kill()
        at_kill = len(payments.snapshot(service)["payments"])
        worker_b = said(harness.run(args(service, folder / "b.db", "pay-b", "PO-B"),
                                    TIMEOUT))
        replacement = said(harness.run(worker_a, TIMEOUT))
    paid = payments.snapshot(service)["payments"]
    return {"payments_at_kill": at_kill, "worker_b": worker_b,
            "a_replacement": replacement, "paid_keys": sorted(p["key"] for p in paid)}


@pytest.mark.parametrize("boundary",
                         ["before_payment", "payment_inserted", "after_payment"])
def test_prediction_matches_the_ledger(sealed, tmp_path, boundary):
    """A prediction is made, not measured: ``predict`` may start no process,
    open no database and read nothing under ``solutions/``."""
    predicted = sealed("ch04", "predict", "solutions", "experiment").predict(
        boundary)
    observed = observe(tmp_path, boundary)
    assert predicted == observed, (
        f"the prediction for a kill at {boundary} is not what the ledger shows:"
        f" predicted {predicted}, observed {observed}")
