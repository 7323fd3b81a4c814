"""The notification, a second side effect with its own identity (chapter 09).

"Paid" is not "notified": the owner's notification has its own operation key
and its own row in the worker's file. A real worker is killed between the
mail provider accepting the notification and the worker recording it; the
resumed worker asks the provider by key, and the owner gets one message,
counted from the provider's rows: at most one per key, given one live
notifier (one process at a time, as here; the provider takes no key).
"""

from __future__ import annotations

import json

import pytest

from crashcourse.lab.harness import Harness
from crashcourse.services import mail, payments
from crashcourse.store import opened
from crashcourse.workers import paying

ORDER, AMOUNT, CURRENCY, TASK = "SUP-0042", 4000, "USD", "restock-0042"


@pytest.fixture
def files(tmp_path):
    where = {"payments": tmp_path / "payments.sqlite",
             "state": tmp_path / "worker.sqlite", "mail": tmp_path / "mail.sqlite"}
    payments.install(where["payments"])
    payments.approve(where["payments"], ORDER, AMOUNT, CURRENCY)
    mail.install(where["mail"])
    return where


def worker(files, order: str = ORDER) -> list[str]:
    return ["-m", "crashcourse.workers.pay_invoice",
            "--payments", str(files["payments"]), "--state", str(files["state"]),
            "--task", TASK, "--order", order, "--amount", str(AMOUNT),
            "--currency", CURRENCY, "--notify", str(files["mail"])]


def to_owner(files) -> list[dict]:
    return [m for m in mail.messages(files["mail"])
            if m["recipient"] == paying.OWNER]


def rows(files) -> dict:
    with opened(files["state"]) as state:
        return {"checkpoints": paying.checkpoints(state),
                "notifications": paying.notifications(state)}


def kill_then_resume(files, boundary: str):
    with Harness() as harness:
        running = harness.start(worker(files), stop_at=boundary)
        running.wait_for_boundary()
        killed = running.kill()
        at_kill = {**rows(files), "owner_messages": len(to_owner(files))}
        resumed = harness.run(worker(files))
    assert killed.returncode == -9
    assert resumed.returncode == 0, resumed.stderr
    return at_kill, json.loads(resumed.stdout)


def test_paid_and_notified_are_two_records_with_two_keys(files):
    with Harness() as harness:
        done = harness.run(worker(files))
    assert json.loads(done.stdout)["notification"] == paying.SENT
    found = rows(files)
    [checkpoint], [notification] = found["checkpoints"], found["notifications"]
    assert notification["state"] == paying.NOTIFIED
    assert notification["operation_key"] != checkpoint["key"]
    [message] = to_owner(files)
    assert message["operation_key"] == notification["operation_key"]
    assert message["message_id"] == notification["message_id"]


def test_killed_between_accepted_and_recorded_the_owner_gets_one_message(files):
    at_kill, report = kill_then_resume(files, "after_notify_accepted")
    assert at_kill["owner_messages"] == 1  # the provider has it ...
    assert [n["state"] for n in at_kill["notifications"]] == [paying.PENDING]
    assert len(at_kill["checkpoints"]) == 1  # ... and paid is not notified
    assert report == {"task": TASK, "outcome": "already_committed",
                      "notification": paying.PROBED}
    assert len(to_owner(files)) == 1
    assert mail.duplicate_messages(files["mail"]) == 0
    [notification] = rows(files)["notifications"]
    assert (notification["state"], notification["settled_by"]) == (
        paying.NOTIFIED, paying.PROBED)
    assert len(payments.snapshot(files["payments"])["payments"]) == 1


def test_killed_after_recording_the_resumed_worker_sends_nothing(files):
    at_kill, report = kill_then_resume(files, "after_notify_recorded")
    assert [n["state"] for n in at_kill["notifications"]] == [paying.NOTIFIED]
    assert report["notification"] == paying.ALREADY
    assert len(to_owner(files)) == 1


def test_killed_before_the_checkpoint_pays_once_and_notifies_once(files):
    at_kill, report = kill_then_resume(files, "after_payment")
    assert at_kill["checkpoints"] == [] and at_kill["owner_messages"] == 0
    assert report["notification"] == paying.SENT
    assert len(to_owner(files)) == 1


def test_an_unpaid_task_is_never_notified_and_nothing_written(files):
    with opened(files["state"]) as state:
        paying.install(state)
        with pytest.raises(ValueError, match="not paid"):
            paying.notify_owner(state, str(files["mail"]), TASK, ORDER, AMOUNT,
                                CURRENCY)
        paying.save_checkpoint(state, TASK, "k-1", "committed")
        with pytest.raises(ValueError, match="address"):
            paying.notify_owner(state, str(files["mail"]), TASK, ORDER, AMOUNT,
                                CURRENCY, recipient="nobody")
        assert paying.notifications(state) == []
    assert mail.messages(files["mail"]) == []


def test_a_refused_payment_sends_no_notification(files):
    with Harness() as harness:  # no approval for this order: refused
        done = harness.run(worker(files, order="PO-UNKNOWN"))
    assert done.returncode == paying.EXITS["refused"], done.stderr
    assert "notification" not in json.loads(done.stdout)
    assert mail.messages(files["mail"]) == []


def test_two_live_notifiers_both_send_the_premise_shown_lost(files):
    """"At most once per key" rests on ONE live notifier. A first worker dies
    after writing its intent, before the mail; two replacements run at once,
    both find the notification pending, both ask the provider (nothing yet),
    both are held just before sending, and both send: two mails under one
    key, which the key header makes countable, not impossible."""
    with Harness() as harness:
        first = harness.start(worker(files), stop_at="before_notify_sent")
        first.wait_for_boundary()
        first.kill()
        twins = [harness.start(worker(files), stop_at="before_notify_sent")
                 for _ in range(2)]
        for twin in twins:
            twin.wait_for_boundary()  # each probed and found nothing
        for twin in twins:
            twin.release()
        finished = [twin.finish() for twin in twins]
    assert [f.returncode for f in finished] == [0, 0], finished[0].stderr
    told = to_owner(files)
    assert len(told) == 2 and len({m["operation_key"] for m in told}) == 1
    assert mail.duplicate_messages(files["mail"]) == 1
    assert len(payments.snapshot(files["payments"])["payments"]) == 1


def test_the_notifiers_look_and_its_pending_row_share_one_write_lock(files):
    """Bug: ``notify_owner`` looks for its row and writes ``pending`` outside
    one transaction: between the two another notifier of the task can write
    (its own ``pending``, or ``notified``), and this one then fails on the
    key or overwrites what the other settled. Deterministic: the moment the
    look returns, a second connection asks for the write lock with a busy
    timeout of 0; it must be refused, every run."""
    import sqlite3

    from crashcourse.store import immediate

    asked = []

    class Probing:  # the worker's connection, asking for the lock after the look
        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, *args):
            cursor = self.conn.execute(sql, *args)
            if sql.startswith("SELECT state, message_id FROM notifications"):
                try:
                    with opened(files["state"], busy_timeout_ms=0) as other, \
                            immediate(other):
                        asked.append("got in")
                except sqlite3.OperationalError:
                    asked.append("kept out")
            return cursor

        def __getattr__(self, name):
            return getattr(self.conn, name)

    with opened(files["state"]) as state:
        paying.install(state)
        paying.save_checkpoint(state, TASK, "k", "committed")
        report = paying.notify_owner(Probing(state), str(files["mail"]), TASK, ORDER,
                                     AMOUNT, CURRENCY)
    assert asked == ["kept out"]
    assert report["notification"] == paying.SENT and len(to_owner(files)) == 1
