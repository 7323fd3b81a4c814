"""Power cuts across two files, and what the fsync costs (chapter 11).

BOOK-ONLY (imports ``apsw`` through ``powerloss``). Experiments 2 and 4 of
chapter 11 (3, the journal, is ``powerloss.journal``), running the book's
own code under ``powerloss.recording``:

* ``pay_then_checkpoint_case``: the payment service is the system of
  record, the worker's checkpoint file is not. The worker's own
  ``paying.pay_then_checkpoint`` pays N invoices; at every crash point the
  image is RESUMED (each task without a checkpoint is paid again under its
  derived key) and the payments counted: double charges, acknowledged
  payments lost, tasks the worker holds done whose payment is gone.
* ``commit_cost``: microseconds per payment commit, FULL against NORMAL,
  measured in one run, rounds interleaved (medians).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from crashcourse import boundary, store
from crashcourse.powerloss import (
    ACK,
    CURRENCY,
    ORDER_CENTS,
    Mode,
    asked,
    disk_calls,
    evidence_points,
    paid_keys,
    recording,
    runtime_opens,
    set_up_service,
    tally,
)
from crashcourse.powerloss.images import SYNCED_ONLY, explore, judge_database
from crashcourse.services import payments
from crashcourse.workers import paying
from crashcourse.workers.pay_invoice import payment_key

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["WORKER", "CHECKPOINTED", "tasks", "marking", "pay_then_checkpoint_run",
    "resume_payments", "pay_then_checkpoint_case", "commit_cost"]

WORKER = "worker.sqlite"
CHECKPOINTED = "checkpointed"  # the mark after the worker's checkpoint commit


def tasks(count: int) -> list[tuple[str, str]]:
    """Experiment 2's (task, order) pairs: task-0 pays order-0... (ch. 11)."""
    return [(f"task-{i}", f"order-{i}") for i in range(count)]


@contextmanager
def marking(recorder, mark: Callable[[str], tuple[str, str] | None]):
    """Mark the run where the code announces a registered boundary
    (``crashcourse.boundary``, heard through ``observing``): ``mark(name)``
    gives (label, value) or None. The moments are the code's own, named where
    it declares them (chapter 11)."""

    def observe(name: str) -> None:
        if (noted := mark(name)) is not None:
            recorder.mark(*noted)

    with boundary.observing(observe):
        yield


def pay_then_checkpoint_run(folder, service_mode: Mode, worker_mode: Mode,
                            count: int, autocheckpoint: int | None = 8):
    """Experiment 2's run: N invoices paid, then checkpointed (chapter 11)."""
    folder = Path(folder)
    service, state_path = set_up_service(folder, count), folder / WORKER
    with store.opened(state_path) as conn:
        paying.install(conn)
    modes = {service.name: service_mode, WORKER: worker_mode}
    current, labels = [None], {"after_payment": ACK, "after_checkpoint": CHECKPOINTED}

    def mark(name: str):  # the service answered; the checkpoint committed
        return (labels[name], current[0]) if name in labels else None

    with recording(folder, modes, autocheckpoint=autocheckpoint) as recorder, \
            marking(recorder, mark):
        # an idle connection to each file, opened as its owner opens it
        server = store.connect(service, require=payments.TABLES, record=True)
        state = store.connect(state_path, require=("checkpoints",))
        try:
            for task, order in tasks(count):
                current[0] = payment_key(task, order, ORDER_CENTS, CURRENCY)
                paying.pay_then_checkpoint(state, str(service), task, current[0],
                                           order, ORDER_CENTS, CURRENCY)
        finally:
            state.close()
            server.close()
    return recorder


def resume_payments(folder: Path, count: int) -> dict:
    """Judge one image of experiment 2: read it, resume the worker on it,
    count the payments per order (chapter 11)."""
    service, state_path = folder / "payments.sqlite", folder / WORKER
    refused = (runtime_opens(folder, service.name, payments.TABLES)
               or runtime_opens(folder, WORKER, ("checkpoints",), record=False))
    before = judge_database(service, paid_keys)
    worker = judge_database(state_path)
    if before["corrupt"] or worker["corrupt"]:
        return {"corrupt": True, "refused": refused,
                "problems": before.get("problems", []) + worker.get("problems", [])}
    resumed = 0
    with store.opened(state_path, require=("checkpoints",)) as state:
        for task, order in tasks(count):
            if paying.load_checkpoint(state, task) is None:
                key = payment_key(task, order, ORDER_CENTS, CURRENCY)
                resumed += paying.pay_then_checkpoint(
                    state, str(service), task, key, order, ORDER_CENTS,
                    CURRENCY)["outcome"] == "committed"
        noted = {row["task"] for row in paying.checkpoints(state)}
    with store.opened(service, require=payments.TABLES, record=True) as conn:
        charged = {row[0]: row[1] for row in conn.execute(
            "SELECT order_id, count(*) FROM payments GROUP BY order_id")}
    unpaid = [task for task, order in tasks(count)
              if task in noted and order not in charged]
    return {"corrupt": False, "refused": refused, "paid": before["paid"],
            "paid_again": resumed,
            "double_charges": sum(n - 1 for n in charged.values()),
            "unpaid": unpaid}


def pay_then_checkpoint_case(folder, service_mode: Mode, worker_mode: Mode,
                             count: int, *, model: str = SYNCED_ONLY,
                             **options) -> dict:
    """Experiment 2 for one pair of modes and one model, counted (ch. 11)."""
    recorder = pay_then_checkpoint_run(folder, service_mode, worker_mode, count)
    points = explore(recorder, lambda image: resume_payments(image, count),
                     model=model, **options)
    verdicts = [v for p in points for v in p.verdicts if not v["corrupt"]]
    return {"mode": f"service {service_mode}, worker {worker_mode}",
            "model": model, "payments": count, "asked": asked(recorder),
            "disk_calls": disk_calls(recorder),
            **tally(recorder, points),
            "unpaid_after_resume": sum(bool(v["unpaid"]) for v in verdicts),
            "paid_again": sum(v["paid_again"] for v in verdicts),
            "points": evidence_points(recorder, points)}


def commit_cost(folder, *, commits: int = 40, rounds: int = 5,
                levels: tuple[str, ...] = ("FULL", "NORMAL")) -> dict:
    """Microseconds per payment commit at each ``synchronous`` level, on a
    real file through the standard ``sqlite3``, one connection held open as
    a server holds it; rounds interleaved, medians (chapter 11)."""
    folder, measured = Path(folder), {level: [] for level in levels}
    conns = {}
    for level in levels:
        (folder / level).mkdir(parents=True)
        service = set_up_service(folder / level, 1)
        conns[level] = store.connect(service, synchronous=level)
    action = {"order_id": "order-0", "amount_cents": ORDER_CENTS,
              "currency": CURRENCY}
    try:
        for round_ in range(rounds):
            for level, conn in conns.items():
                started = time.perf_counter()
                for i in range(commits):
                    with store.immediate(conn):
                        terms = payments.require_approval(conn, action)
                        payments.record_payment(conn, f"cost-{round_}-{i}", action,
                                                terms)
                elapsed = time.perf_counter() - started
                measured[level].append(elapsed / commits * 1e6)
    finally:
        for conn in conns.values():
            conn.close()
    return {level: {"us_per_commit": round(statistics.median(values), 1),
                    "rounds_us": [round(v, 1) for v in values]}
            for level, values in measured.items()}
