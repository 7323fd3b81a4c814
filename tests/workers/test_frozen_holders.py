"""A holder paused (a real SIGSTOP) while it keeps the write lock of a file a
worker writes is a live holder, not the machine (issue 35).

Before, every worker here waited out its busy timeout and exited 74, "the
machine refused: database is locked" (``charge_read_first`` on the payment
service's lock too, where ``charge`` says busy). Now each exits with the
status its docstring documents for "held" (``options.one_line_errors``'s
``held``: one JSON line on stdout, nothing on stderr), having written nothing
in the transaction that waited; once the holder is thawed and done, the same
command run again finishes, and each effect is there once.

The holder is the worker itself frozen at a boundary inside its own write
transaction where it has one (``restock_note``'s ``inside_transaction``,
``shop_worker``'s ``chosen``, ``charge``'s ``payment_inserted``), else a
process of the runtime frozen inside ``BEGIN IMMEDIATE`` on that file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from crashcourse import claims, control
from crashcourse.claims import orders
from crashcourse.lab import pauses
from crashcourse.lab.harness import Harness, Worker
from crashcourse.services import broker, drive, mail, payments
from crashcourse.store import opened, table_rows
from crashcourse.workers import (
    host_worker,
    journal_worker,
    paying,
    restock_note,
    scheduler,
    shop_worker,
    wedged_worker,
)
from crashcourse.workers.options import HELD_LINE

# A process of the runtime inside a write transaction on argv[1], held there.
HOLDER = ["-c", "import sys; from crashcourse.boundary import boundary;"
          " from crashcourse.store import immediate, opened\n"
          "with opened(sys.argv[1]) as conn, immediate(conn):\n"
          "    boundary('holding')"]
FAST_MS = "300"  # a service's busy timeout, where the worker takes one


def module(name: str) -> list[str]:
    return ["-m", f"crashcourse.workers.{name}"]


def frozen(worker: Worker) -> Worker:
    """``worker``, at its boundary inside a write transaction, frozen there
    (SIGSTOP): it keeps the lock and does nothing until thawed."""
    worker.wait_for_boundary()
    worker.freeze()
    worker.release()  # read once it runs again
    return worker


@contextmanager
def frozen_writer(harness: Harness, path: Path):
    """A runtime process frozen inside ``BEGIN IMMEDIATE`` on ``path``; thawed
    and finished (it commits nothing) when the block ends."""
    holder = frozen(harness.start([*HOLDER, str(path)], stop_at="holding"))
    yield holder
    holder.thaw()
    ended = holder.finish()
    assert ended.returncode == 0, f"the holder did not end cleanly: {ended.stderr}"


def assert_held(done, status: int, what: str) -> None:
    """Exit ``status``, the one JSON line saying held, nothing on stderr."""
    assert done.returncode == status, (
        f"{what} beside a frozen holder exited {done.returncode}, not its"
        f" documented held status {status}: {done.stderr.strip()[-300:]}")
    assert done.stderr == "", f"{what} said more than its one line: {done.stderr}"
    assert json.loads(done.stdout.splitlines()[-1]) == {"held": HELD_LINE}, (
        f"{what}'s last line does not say held: {done.stdout!r}")


def test_restock_note_beside_a_frozen_note_says_held_and_posts_once(tmp_path):
    db = tmp_path / "shop.sqlite"
    note = [*module("restock_note"), "--db", str(db), "--task", "t-1",
            "--sku", "oat-milk", "--quantity", "2"]
    with opened(db) as conn:
        restock_note.install(conn)
    with Harness() as harness:
        first = frozen(harness.start(note, stop_at="inside_transaction"))
        replacement = harness.run(note)
        with opened(db) as conn:
            during = restock_note.snapshot(conn)
        first.thaw()
        ended = first.finish()
        again = harness.run(note)
    assert_held(replacement, restock_note.HELD_EXIT, "restock_note")
    assert during == {"restock_notes": [], "stock": [], "effect_ledger": []}, (
        "the replacement wrote while the frozen note held the lock")
    assert ended.returncode == 0, ended.stderr
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "already_applied", again.stdout
    with opened(db) as conn:
        assert [r["on_order"] for r in table_rows(conn, "stock")] == [2], (
            "the note was posted more than once")


def test_shop_worker_beside_a_frozen_claim_says_held(tmp_path):
    db = tmp_path / "agent.sqlite"
    with opened(db) as conn:
        orders.install(conn)
        claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    with Harness() as harness:
        first = frozen(harness.start([*module("shop_worker"), "drain", "--db",
                                      str(db), "--limit", "1",  # one chosen
                                      "--ttl", "60"],  # outlives the freeze
                                     stop_at=shop_worker.CHOSEN))
        replacement = harness.run([*module("shop_worker"), "run", "--db", str(db),
                                   "--url", "http://127.0.0.1:9"])
        with opened(db) as conn:
            during = table_rows(conn, "claims")
        first.thaw()
        ended = first.finish()
    assert_held(replacement, shop_worker.HELD, "shop_worker run")
    assert during == [], "the replacement claimed while the frozen claim held the lock"
    assert ended.returncode == 0, ended.stderr
    assert json.loads(ended.stdout) == {"finished": 1, "stale": 0}


def test_host_worker_beside_a_frozen_writer_says_held(tmp_path):
    db = tmp_path / "shop.sqlite"
    with opened(db) as conn:
        orders.install(conn)
        claims.enqueue(conn, "phone:shelf-0", "counter-0", "Shelf 0")
    work = [*module("host_worker"), "work", "--store", str(db),
            "--supplier", "http://127.0.0.1:9", "--patience", "1"]
    with Harness() as harness, frozen_writer(harness, db):
        replacement = harness.run(work)
        with opened(db) as conn:
            during = table_rows(conn, "claims")
    assert_held(replacement, host_worker.HELD, "host_worker work")
    assert during == [], "the replacement claimed beside the frozen writer"


def test_a_host_worker_held_for_its_parent_keeps_the_harness_bound(tmp_path):
    """``wait_for_parent`` waited a fixed 30 s whatever the harness said; it
    holds for ``CRASHCOURSE_HOLD_SECONDS``, as a boundary does, then exits
    ``HOLD_EXPIRED``, never going on by itself."""
    db = tmp_path / "shop.sqlite"
    with opened(db) as conn:
        orders.install(conn)
        claims.enqueue(conn, "phone:shelf-0", "counter-0", "Shelf 0")
    held = subprocess.Popen(
        [sys.executable, *module("host_worker"), "drain", "--store", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "CRASHCOURSE_HOLD_SECONDS": "0.5"})
    try:  # stdin stays open (communicate would close it: an EOF, not a hold)
        held.wait(timeout=20)  # well under the old fixed 30 s
    finally:
        if held.poll() is None:
            held.kill()
            held.wait()
        held.stdin.close()
        out, err = held.stdout.read(), held.stderr.read()
        held.stdout.close(), held.stderr.close()
    assert held.returncode == host_worker.HOLD_EXPIRED, (
        f"the held worker did not give up after the harness's bound: {err}")
    assert out.startswith("ready"), f"it never said ready: {out!r}"
    with opened(db) as conn:
        assert table_rows(conn, "claims") == [], "it went on by itself"


def test_a_bad_hold_bound_is_refused_before_the_host_worker_starts(tmp_path):
    db = tmp_path / "shop.sqlite"
    with opened(db) as conn:
        orders.install(conn)
    done = subprocess.run(
        [sys.executable, *module("host_worker"), "drain", "--store", str(db)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        env={**os.environ, "CRASHCOURSE_HOLD_SECONDS": "inf"})
    assert done.returncode == 2, f"an infinite hold bound was taken: {done.stderr}"
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stdout == "", "it said ready with a bound it cannot keep"


def test_scheduler_beside_a_frozen_writer_says_held_and_starts_nothing(tmp_path):
    state = tmp_path / "state.sqlite"
    with opened(state) as conn:
        control.install(conn)
        control.start_scheduler(conn, "person")
    tick = [*module("scheduler"), "--state", str(state), "--name", "s1",
            "--ticks", "1"]
    with Harness() as harness:
        with frozen_writer(harness, state):
            replacement = harness.run(tick)
        with opened(state) as conn:
            during = scheduler.ticks_of(conn, "s1")
        again = harness.run(tick)
    assert_held(replacement, scheduler.HELD, "scheduler")
    assert during == [], "the held scheduler recorded a tick"
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {"ticks": 1, "started": 1}


def test_wedged_worker_beside_a_frozen_drive_writer_says_held(tmp_path):
    paths = {name: tmp_path / f"{name}.sqlite" for name in ("broker", "drive", "mail")}
    broker.install(paths["broker"])
    drive.install(paths["drive"], {"f001": "scan-001.pdf"}, broker=paths["broker"])
    mail.install(paths["mail"], broker=paths["broker"])
    token = broker.issue(paths["broker"], "assistant", "drive:rename mail:submit", 60)
    with Harness() as harness, frozen_writer(harness, paths["drive"]):
        replacement = harness.run([*module("wedged_worker"), "--drive",
                                   str(paths["drive"]), "--mail", str(paths["mail"]),
                                   "--credential", token, "--limit", "2"])
        during = drive.snapshot(paths["drive"])["rename_requests"]
    assert_held(replacement, wedged_worker.HELD, "wedged_worker")
    assert during == [], "a rename went through beside the frozen writer"


def paid(tmp_path) -> dict[str, Path]:
    """An installed payment service and a worker's own file, installed."""
    where = {"service": tmp_path / "payments.sqlite",
             "state": tmp_path / "state.sqlite"}
    payments.install(where["service"])
    payments.approve(where["service"], "PO-1", 4000, "USD")
    with opened(where["state"]) as conn:
        paying.install(conn)
    return where


def invoice(where: dict[str, Path], worker: str = "pay_invoice",
            *extra: str) -> list[str]:
    return [*module(worker), "--payments", str(where["service"]), "--state",
            str(where["state"]), "--task", "restock-1", "--order", "PO-1",
            "--amount", "4000", "--currency", "USD", *extra]


def payments_made(where) -> list[dict]:
    return payments.snapshot(where["service"])["payments"]


def test_pay_invoice_beside_a_frozen_state_writer_says_held_then_pays_once(tmp_path):
    where = paid(tmp_path)
    with Harness() as harness:
        with frozen_writer(harness, where["state"]):
            replacement = harness.run(invoice(where))
            with opened(where["state"]) as conn:
                during = paying.checkpoints(conn)
        again = harness.run(invoice(where))
    assert_held(replacement, paying.EXITS["held"], "pay_invoice")
    assert during == [], "a checkpoint was written beside the frozen writer"
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["outcome"] == "already_committed", (
        "the rerun did not find the charge the held run made")
    assert len(payments_made(where)) == 1, "the rerun charged again"


def test_pay_invoice_notify_beside_a_frozen_mail_writer_says_held(tmp_path):
    where = paid(tmp_path)
    where["mail"] = tmp_path / "mail.sqlite"
    mail.install(where["mail"])
    with Harness() as harness:
        with frozen_writer(harness, where["mail"]):
            replacement = harness.run(invoice(where, "pay_invoice", "--notify",
                                              str(where["mail"])))
        again = harness.run(invoice(where, "pay_invoice", "--notify",
                                    str(where["mail"])))
    assert_held(replacement, paying.EXITS["held"], "pay_invoice --notify")
    assert again.returncode == 0, again.stderr
    assert len(mail.snapshot(where["mail"])["messages"]) == 1, (
        "the owner was not told exactly once")
    assert len(payments_made(where)) == 1, "the rerun charged again"


def test_charge_beside_a_frozen_state_writer_says_held(tmp_path):
    where = paid(tmp_path)
    with Harness() as harness:
        with frozen_writer(harness, where["state"]):
            replacement = harness.run(invoice(where, "charge", "--key", "k-1"))
        again = harness.run(invoice(where, "charge", "--key", "k-1"))
    assert_held(replacement, paying.EXITS["held"], "charge")
    assert again.returncode == 0, again.stderr
    assert len(payments_made(where)) == 1, "the rerun charged again"


def test_charge_read_first_beside_a_frozen_charge_is_busy_as_charge(tmp_path):
    """The payment service's lock kept by a charge frozen inside its
    transaction (``payment_inserted``): ``charge`` says busy (5), nothing
    charged; its mutant exited 74, "database is locked"."""
    where = paid(tmp_path)
    with Harness() as harness:
        first = frozen(harness.start(invoice(where, "charge", "--key", "k-1"),
                                     stop_at="payment_inserted"))
        answers = {name: harness.run(invoice(where, name, "--key", "k-2",
                                             "--busy-timeout-ms", FAST_MS))
                   for name in ("charge", "charge_read_first")}
        first.thaw()
        ended = first.finish()
    for name, done in answers.items():
        assert done.returncode == paying.EXITS["busy"], (
            f"{name} beside a locked payment service exited {done.returncode},"
            f" not busy: {done.stderr.strip()[-300:]}")
        assert done.stderr == "", f"{name} said more than its one line: {done.stderr}"
        assert json.loads(done.stdout)["outcome"] == "busy"
    assert ended.returncode == 0, ended.stderr
    assert [p["key"] for p in payments_made(where)] == ["k-1"], (
        "a busy charge was made")


def test_unfenced_journal_worker_beside_a_frozen_journal_writer_says_held(tmp_path):
    task = pauses.build(str(tmp_path), pauses.pause_plan(renames=1, mails=1))
    journal_file = pauses.paths(str(tmp_path))["journal"]
    with Harness() as harness, frozen_writer(harness, Path(journal_file)):
        replacement = harness.run(["-m", pauses.CONTROL, "--dir", str(tmp_path),
                                   "--task", task])
    assert replacement.returncode == journal_worker.HELD, replacement.stderr
    assert replacement.stderr == "", replacement.stderr
    assert "write lock" in json.loads(replacement.stdout)["held"]
    assert drive.snapshot(pauses.paths(str(tmp_path))["drive"])[
        "rename_requests"] == [], "a rename went through beside the frozen writer"


def test_lock_kept_knows_a_live_holder_from_the_machine():
    from crashcourse.workers.options import lock_kept

    assert lock_kept(sqlite3.OperationalError("database is locked"))
    assert lock_kept(sqlite3.OperationalError("locking protocol"))
    assert not lock_kept(sqlite3.OperationalError("disk I/O error")), (
        "a failing disk was taken for a live holder")
    assert not lock_kept(OSError(28, "No space left on device"))
