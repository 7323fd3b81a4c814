"""No silent loss (issue 14): a store that vanished is refused, never replaced,
and a journal that lost its tail asks the world before it acts again.

Services are called by path; each call that is not ``install`` opens an
INSTALLED store or raises ``StoreMissing`` and leaves the file as it found it.
The journal half is a real experiment: a worker SIGKILLed after its first
mail went out, the journal's ``-wal`` deleted, the worker resumed.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from crashcourse import journal
from crashcourse.lab.example import restock_plan
from crashcourse.lab.harness import Harness
from crashcourse.services import broker, drive, mail, payments
from crashcourse.store import StoreMissing
from crashcourse.workers.journal_worker import build_world, paths

ORDER, AMOUNT, CURRENCY, KEY = "SUP-0042", 4000, "USD", "restock-0042/1/pay_invoice"
PLAN = restock_plan()
MAILS = [s.number for s in PLAN.steps if s.irreversible]  # 42, 43
RENAMES = [s.number for s in PLAN.steps if s.action == "rename"]  # 1..40

# Every call of every service that is not its install, on a file at ``p``.
CALLS = {
    "payments.approve": lambda p: payments.approve(p, ORDER, AMOUNT, CURRENCY),
    "payments.revoke": lambda p: payments.revoke(p, ORDER),
    "payments.issue_payment": lambda p: payments.issue_payment(
        p, KEY, ORDER, AMOUNT, CURRENCY),
    "payments.snapshot": payments.snapshot,
    "mail.submit": lambda p: mail.submit(p, "owner@shop.example", "s", "b", {}),
    "mail.tick": mail.tick,
    "mail.probe_sent": lambda p: mail.probe_sent(p, "restock/42/send_mail/x"),
    "mail.sent_folder": mail.sent_folder,
    "mail.messages": mail.messages,
    "mail.duplicate_messages": mail.duplicate_messages,
    "mail.snapshot": mail.snapshot,
    "drive.lookup": lambda p: drive.lookup(p, "f001"),
    "drive.rename_to": lambda p: drive.rename_to(p, "f001", "invoice.pdf"),
    "drive.probe_rename": lambda p: drive.probe_rename(p, "f001", "invoice.pdf"),
    "drive.probe_rename_by_name": lambda p: drive.probe_rename_by_name(
        p, "f001", "invoice.pdf"),
    "drive.names": drive.names,
    "drive.duplicate_requests": drive.duplicate_requests,
    "drive.snapshot": drive.snapshot,
    "broker.issue": lambda p: broker.issue(p, "assistant", "mail:submit", 60),
    "broker.revoke": lambda p: broker.revoke(p, "cred-0", "owner"),
    "broker.verify": lambda p: broker.verify(p, "cred-0", "mail:submit"),
    "broker.snapshot": broker.snapshot,
    "broker.note_refusal": lambda p: broker.note_refusal(p, "submit", None, "missing"),
}


def not_a_store(path: Path, kind: str) -> None:
    """Leave at ``path`` what a lost or wrong store looks like."""
    if kind == "empty":  # truncated to 0 bytes
        path.write_bytes(b"")
    elif kind == "not_a_database":
        path.write_bytes(b"invoice scans, not SQLite\n" * 200)
    elif kind == "not_installed":  # a real SQLite file of something else
        with sqlite3.connect(path) as other:
            other.execute("CREATE TABLE notes (body TEXT)")
        other.close()


def files_in(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("kind", ["missing", "empty", "not_a_database",
                                  "not_installed"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_service_call_refuses_a_store_that_is_not_there(tmp_path, call, kind):
    path = tmp_path / "service.sqlite"
    not_a_store(path, kind)
    before = files_in(tmp_path)
    with pytest.raises(StoreMissing):
        CALLS[call](path)
    assert files_in(tmp_path) == before  # nothing created, nothing written


@pytest.fixture
def paid_history(tmp_path) -> Path:
    """A payment service with one committed payment, then truncated to 0 bytes."""
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    payments.approve(path, ORDER, AMOUNT, CURRENCY)
    assert payments.issue_payment(path, KEY, ORDER, AMOUNT, CURRENCY) == "committed"
    assert len(payments.snapshot(path)["payments"]) == 1
    os.truncate(path, 0)  # closed cleanly: no -wal is left to replay either
    assert sorted(p.name for p in tmp_path.iterdir()) == ["payments.sqlite"]
    return path


def test_a_truncated_payment_history_is_refused_not_read_as_never_paid(paid_history):
    for attempt in ("replay", "new key"):
        key = KEY if attempt == "replay" else KEY + "#2"
        with pytest.raises(StoreMissing, match="0 bytes"):
            payments.issue_payment(paid_history, key, ORDER, AMOUNT, CURRENCY)
    assert paid_history.stat().st_size == 0


def test_the_payment_worker_never_answers_from_an_empty_store(paid_history, tmp_path):
    state = tmp_path / "worker.sqlite"
    with Harness() as harness:
        done = harness.run(["-m", "crashcourse.workers.pay_invoice",
                            "--payments", str(paid_history), "--state", str(state),
                            "--task", "restock-0042", "--order", ORDER,
                            "--amount", str(AMOUNT), "--currency", CURRENCY])
    # not paid (0), not "refused: not approved" (3): the store is not there
    assert done.returncode not in (0, 3), done.stdout
    assert "refused" not in done.stdout and "committed" not in done.stdout
    assert paid_history.stat().st_size == 0
    assert not Path(f"{paid_history}-wal").exists()


def test_a_guarded_service_refuses_when_its_broker_was_truncated(tmp_path):
    broker_path, mail_path = tmp_path / "broker.sqlite", tmp_path / "mail.sqlite"
    broker.install(broker_path)
    token = broker.issue(broker_path, "assistant", "mail:submit", 60)
    mail.install(mail_path, broker=broker_path)
    os.truncate(broker_path, 0)
    with pytest.raises(StoreMissing):
        mail.submit(mail_path, "owner@shop.example", "s", "b", {},
                    credential=token)
    assert mail.messages(mail_path) == []
    assert broker_path.stat().st_size == 0
    with pytest.raises(ValueError, match="no broker"):  # nor guards a new one
        drive.install(tmp_path / "drive.sqlite", broker=broker_path)
    assert broker_path.stat().st_size == 0


# --- a journal that lost its tail ---------------------------------------------------


def journal_rows(path: str) -> int:
    """Rows the journal holds, read WITHOUT folding its -wal into the file: a
    read-only connection cannot checkpoint, so reading changes nothing."""
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return reader.execute("SELECT count(*) FROM journal").fetchone()[0]
    finally:
        reader.close()


def test_a_lost_wal_does_not_send_the_mail_twice(tmp_path):
    folder = str(tmp_path)
    task, where = build_world(folder, PLAN), paths(folder)
    worker = ["-m", "crashcourse.workers.journal_worker", "--dir", folder,
              "--task", task]
    at_start = journal_rows(where["journal"])  # what the file held: the plan only
    with Harness() as harness:
        first = harness.start(worker, stop_at=f"step-{MAILS[0]}:after_action")
        first.wait_for_boundary()
        assert first.kill().returncode == -9
        assert journal_rows(where["journal"]) == MAILS[0]  # one commit per step
        assert len(mail.messages(where["mail"])) == 1  # the first mail is out
        os.remove(where["journal"] + "-wal")  # the lost tail
        assert journal_rows(where["journal"]) == at_start == 0
        resumed = harness.run(worker)
    assert resumed.returncode == 0, resumed.stderr
    sent = [int(m["operation_key"].split("/")[1]) for m in mail.messages(where["mail"])]
    assert sent == MAILS  # one message per mail step, not two for the first
    # every rename and the first mail found at their targets, the gate and
    # the second mail run
    assert json.loads(resumed.stdout) == {"skip": 0, "probe": len(RENAMES) + 1,
                                          "run": 2}
    assert mail.duplicate_messages(where["mail"]) == 0
    assert drive.duplicate_requests(where["drive"]) == 0
    with sqlite3.connect(where["journal"]) as conn:
        conn.row_factory = sqlite3.Row
        assert journal.resolutions(conn, task) == {"run": 2,
                                                   "probe": len(RENAMES) + 1}
        assert journal.journal_status(conn, task, PLAN).count("confirmed") == len(
            PLAN.steps)
    conn.close()
