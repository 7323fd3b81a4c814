"""Grades exercise 09.2 (notify_once.py): the supplier is told at most once per
notice key, given one live notifier (one process at a time, as here).

The payment is real (the ``pay_invoice`` worker, which also notifies the
owner); the notice runs in a real child process that loads YOUR module and is
SIGKILLed on either side of the provider accepting the mail. The test wraps
``mail.submit`` in that child with two boundaries, so the kill lands in the
gap whatever your code does next. Every count is read from the provider's
rows and the worker's file.
"""

import pytest

from crashcourse.lab.harness import Harness
from crashcourse.services import broker, mail, payments
from crashcourse.store import opened
from crashcourse.workers import paying
from crashcourse.workers.pay_invoice import payment_key

AMOUNT, CURRENCY = 4000, "USD"
INVOICES = {"restock-0042": "SUP-0042", "restock-0043": "SUP-0043"}
TASK, ORDER = "restock-0042", "SUP-0042"
SUPPLIER = "orders@supplier.example"
BEFORE, AFTER = "before_provider_accepts", "after_provider_accepted"

# The child: wrap mail.submit with two boundaries, unplug notify_owner, load the
# answer from its file, and send one notice. Only the rows it leaves are graded.
CHILD = f"""
import importlib.util, sys
from crashcourse.boundary import boundary
from crashcourse.services import mail
from crashcourse.store import opened
from crashcourse.workers import paying

accept = mail.submit

def submit(*args, **kwargs):
    boundary({BEFORE!r})
    accepted = accept(*args, **kwargs)
    boundary({AFTER!r})
    return accepted

def off_limits(*args, **kwargs):
    raise AssertionError("write the notice yourself: notify_owner is unplugged")

mail.submit, paying.notify_owner = submit, off_limits
answer_file, state, mail_path, task, order = sys.argv[1:6]
spec = importlib.util.spec_from_file_location("answer", answer_file)
answer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(answer)
with opened(state) as conn:
    answer.notify_supplier(conn, mail_path, task, order, {AMOUNT}, {CURRENCY!r})
"""


@pytest.fixture(autouse=True)
def notify_owner_is_off_limits(monkeypatch):
    """The owner's notification is the runtime's; the supplier's is yours."""

    def off_limits(*args, **kwargs):
        raise AssertionError("write the notice yourself: notify_owner is unplugged")

    monkeypatch.setattr(paying, "notify_owner", off_limits)


@pytest.fixture
def mod(answer):
    return answer("ch09", "notify_once")


@pytest.fixture
def files(tmp_path):
    where = {"payments": tmp_path / "payments.sqlite",
             "state": tmp_path / "worker.sqlite", "mail": tmp_path / "mail.sqlite"}
    payments.install(where["payments"])
    for order in INVOICES.values():
        payments.approve(where["payments"], order, AMOUNT, CURRENCY)
    return where


def pay(files, task=TASK, *, notify_owner=True):
    """The real payment worker; with --notify it also tells the owner."""
    args = ["-m", "crashcourse.workers.pay_invoice",
            "--payments", str(files["payments"]), "--state", str(files["state"]),
            "--task", task, "--order", INVOICES[task], "--amount", str(AMOUNT),
            "--currency", CURRENCY]
    with Harness() as harness:
        done = harness.run(args + (["--notify", str(files["mail"])]
                                   if notify_owner else []))
    assert done.returncode == 0, done.stderr


@pytest.fixture
def paid(files):
    mail.install(files["mail"])
    pay(files)
    return files


def notice(mod, files, task=TASK):
    with opened(files["state"]) as state:
        return mod.notify_supplier(state, str(files["mail"]), task, INVOICES[task],
                                   AMOUNT, CURRENCY)


def child(mod, files, task=TASK) -> list[str]:
    return ["-c", CHILD, mod.__file__, str(files["state"]), str(files["mail"]),
            task, INVOICES[task]]


def killed_at(mod, files, boundary, task=TASK):
    """Run the notice in a real process, SIGKILL it at ``boundary``, and read
    what was left: the worker's notice rows and the supplier's messages."""
    with Harness() as harness:
        running = harness.start(child(mod, files, task), stop_at=boundary)
        running.wait_for_boundary()
        assert running.kill().returncode == -9
    return rows(mod, files), to_supplier(files)


def resume(mod, files, task=TASK) -> None:
    """The same notice again, in a new process, run to its end."""
    with Harness() as harness:
        done = harness.run(child(mod, files, task))
    assert done.returncode == 0, done.stderr


def rows(mod, files):
    with opened(files["state"]) as state:
        return mod.notices(state)


def to_supplier(files):
    return [m for m in mail.messages(files["mail"]) if m["recipient"] == SUPPLIER]


def keys_of(files):
    with opened(files["state"]) as state:
        [checkpoint] = [c for c in paying.checkpoints(state) if c["task"] == TASK]
        [owner] = [n for n in paying.notifications(state) if n["task"] == TASK]
    return checkpoint["key"], owner["operation_key"]


def test_the_notice_has_a_key_of_its_own(mod):
    key = mod.notice_key(TASK, ORDER)
    assert key == mod.notice_key(TASK, ORDER)  # derived, never drawn
    assert key != payment_key(TASK, ORDER, AMOUNT, CURRENCY)
    assert key != mod.notice_key("restock-0043", "SUP-0043")
    assert key != mod.notice_key(TASK, ORDER, "accounts@supplier.example")
    assert key.startswith(f"{TASK}/3/notify_supplier/")


def test_paid_notified_and_told_are_three_records(mod, paid):
    report = notice(mod, paid)
    [message] = to_supplier(paid)
    [row] = rows(mod, paid)
    payment, owner = keys_of(paid)
    assert report == {"notification": mod.SENT, "message_id": message["message_id"]}
    assert (row["state"], row["settled_by"], row["message_id"]) == (
        mod.NOTIFIED, mod.SENT, message["message_id"])
    assert message["operation_key"] == row["operation_key"] == mod.notice_key(
        TASK, ORDER)
    assert row["operation_key"] not in (payment, owner)
    assert notice(mod, paid) == {"notification": mod.ALREADY,
                                 "message_id": message["message_id"]}
    assert len(to_supplier(paid)) == 1


def test_killed_after_the_provider_accepted_the_supplier_gets_one_message(mod, paid):
    left, sent = killed_at(mod, paid, AFTER)
    assert [m["status"] for m in sent] == [mail.QUEUED]  # accepted, not delivered
    resume(mod, paid)
    told = to_supplier(paid)
    assert len(told) == 1, f"the supplier got {len(told)} notices for one invoice"
    assert mail.duplicate_messages(paid["mail"]) == 0
    assert [r["state"] for r in left] == [mod.PENDING]  # the intent, no outcome
    [row] = rows(mod, paid)  # the resumed process found it by asking
    assert (row["state"], row["settled_by"], row["message_id"]) == (
        mod.NOTIFIED, mod.PROBED, told[0]["message_id"])


def test_killed_before_the_provider_accepted_the_resume_sends_it(mod, paid):
    """The owner was told about this order already: that mail is not the
    supplier's notice, whatever its subject says."""
    left, sent = killed_at(mod, paid, BEFORE)
    assert [r["state"] for r in left] == [mod.PENDING]  # written before the mail
    assert sent == []
    resume(mod, paid)
    [message] = to_supplier(paid)
    [row] = rows(mod, paid)
    assert (row["state"], row["settled_by"]) == (mod.NOTIFIED, mod.SENT)
    assert message["operation_key"] == row["operation_key"]


def test_a_second_invoice_gets_its_own_notice(mod, paid):
    """The supplier already holds the notice for SUP-0042; the notice for
    SUP-0043 is killed before the provider accepts it, then resumed."""
    pay(paid, "restock-0043")
    notice(mod, paid)
    mail.tick(paid["mail"])  # the first notice is delivered: in the sent folder
    killed_at(mod, paid, BEFORE, task="restock-0043")
    resume(mod, paid, task="restock-0043")
    told = sorted(m["operation_key"] for m in to_supplier(paid))
    assert told == sorted(mod.notice_key(task, order)
                          for task, order in INVOICES.items()), (
        "each invoice's notice is its own message, under its own key")


def test_a_revoked_credential_leaves_the_notice_pending(mod, files, tmp_path):
    """The out-of-band stop: the provider refuses the call and the intent
    stays. The revoked holder gets no new credential until a person grants it
    again; then the notice goes out once, under the new credential."""
    where = tmp_path / "broker.sqlite"
    broker.install(where)
    mail.install(files["mail"], broker=where)
    pay(files, notify_owner=False)
    token = broker.issue(where, "paying-worker", "mail:submit", ttl=300)
    broker.revoke(where, token, "night-rota")
    with opened(files["state"]) as state, pytest.raises(broker.CredentialRefused):
        mod.notify_supplier(state, str(files["mail"]), TASK, ORDER, AMOUNT, CURRENCY,
                            credential=token)
    assert [r["state"] for r in rows(mod, files)] == [mod.PENDING]
    assert mail.messages(files["mail"]) == []
    with pytest.raises(broker.HolderStopped):  # the stop holds for the holder
        broker.issue(where, "paying-worker", "mail:submit", ttl=300)
    broker.grant(where, "paying-worker", "day-rota")  # a person decides
    fresh = broker.issue(where, "paying-worker", "mail:submit", ttl=300)
    with opened(files["state"]) as state:
        report = mod.notify_supplier(state, str(files["mail"]), TASK, ORDER, AMOUNT,
                                     CURRENCY, credential=fresh)
    assert report["notification"] == mod.SENT
    [message] = to_supplier(files)
    assert mail.snapshot(files["mail"])["messages"][0]["credential"] == fresh
    assert message["operation_key"] == mod.notice_key(TASK, ORDER)


@pytest.mark.parametrize(("task", "order", "amount", "currency", "recipient"), [
    ("restock-0099", "SUP-0099", AMOUNT, CURRENCY, SUPPLIER),
    (TASK, ORDER, AMOUNT, CURRENCY, "the supplier"),
    ("", ORDER, AMOUNT, CURRENCY, SUPPLIER),
    (TASK, " ", AMOUNT, CURRENCY, SUPPLIER),
    (TASK, ORDER, 40.0, CURRENCY, SUPPLIER),
    (TASK, ORDER, -4000, CURRENCY, SUPPLIER),
    (TASK, ORDER, AMOUNT, "usd", SUPPLIER),
], ids=["unpaid-task", "not-an-address", "blank-task", "blank-order",
        "float-amount", "negative-amount", "lower-case-currency"])
def test_bad_input_is_refused_and_nothing_written(mod, paid, task, order, amount,
                                                  currency, recipient):
    with opened(paid["state"]) as state, pytest.raises((ValueError, TypeError)):
        mod.notify_supplier(state, str(paid["mail"]), task, order, amount, currency,
                            recipient=recipient)
    assert rows(mod, paid) == []
    assert [m["recipient"] for m in mail.messages(paid["mail"])] == [paying.OWNER]
