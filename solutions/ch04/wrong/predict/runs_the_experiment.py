"""The experiment run, not predicted. Caught by
``test_prediction_matches_the_ledger``."""

import json
import tempfile
from pathlib import Path

from crashcourse.lab.harness import Harness
from crashcourse.services import payments


def predict(boundary: str) -> dict:
    def worker(folder, key, order):
        return ["-m", "crashcourse.workers.charge", "--payments",
                str(folder / "payments.db"), "--state", str(folder / f"{key}.db"),
                "--task", f"task-{key}", "--key", key, "--order", order,
                "--amount", "4000", "--currency", "USD"]

    def said(finished):
        report = json.loads(finished.stdout.strip().splitlines()[-1])
        return report.get("reason", report["outcome"])

    with tempfile.TemporaryDirectory() as aside:
        folder = Path(aside)
        service = folder / "payments.db"
        payments.install(service, max_actions=1, currency_caps={"USD": 8000})
        for order in ("PO-A", "PO-B"):
            payments.approve(service, order, 4000, "USD")
        with Harness() as harness:
            killed = harness.start(worker(folder, "pay-a", "PO-A"),
                                   stop_at=boundary)
            killed.wait_for_boundary(20)
            killed.kill()
            at_kill = len(payments.snapshot(service)["payments"])
            worker_b = said(harness.run(worker(folder, "pay-b", "PO-B"), 20))
            replacement = said(harness.run(worker(folder, "pay-a", "PO-A"), 20))
        paid = sorted(p["key"] for p in payments.snapshot(service)["payments"])
    return {"payments_at_kill": at_kill, "worker_b": worker_b,
            "a_replacement": replacement, "paid_keys": paid}
