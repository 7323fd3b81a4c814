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

WORLD = "the grader's world, not your answer: "  # a set-up assert's message
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
    assert done.returncode == 0, (
        f"{WORLD}the payment worker for {task} failed (exit"
        f" {done.returncode}): {done.stderr[-2000:]}")


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
        code = running.kill().returncode
        assert code == -9, (
            f"{WORLD}the notice's process was to be SIGKILLed at {boundary},"
            f" and exited {code}")
    return rows(mod, files), to_supplier(files)


def resume(mod, files, task=TASK) -> None:
    """The same notice again, in a new process, run to its end."""
    with Harness() as harness:
        done = harness.run(child(mod, files, task))
    assert done.returncode == 0, (
        f"the resumed notice for {task}, run to its end in a new process, failed"
        f" (exit {done.returncode}): {done.stderr[-2000:]}")


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
    again = mod.notice_key(TASK, ORDER)
    assert key == again, (  # derived, never drawn
        "the notice's key was drawn, not derived: the same notice got two keys,"
        f" {key!r} and {again!r}, so a resumed process cannot find its own")
    paying_key = payment_key(TASK, ORDER, AMOUNT, CURRENCY)
    assert key != paying_key, (
        f"the notice reuses the payment's key ({key!r}): it is a second effect"
        " and needs a key of its own")
    other = mod.notice_key("restock-0043", "SUP-0043")
    assert key != other, (
        f"two invoices' notices share the key {key!r}: one key per notice")
    elsewhere = mod.notice_key(TASK, ORDER, "accounts@supplier.example")
    assert key != elsewhere, (
        f"notices to two recipients share the key {key!r}: the recipient is"
        " part of what the notice is")
    assert key.startswith(f"{TASK}/3/notify_supplier/"), (
        f"the key {key!r} is not the task's step 3, notify_supplier:"
        f" it should begin {TASK}/3/notify_supplier/")


def test_paid_notified_and_told_are_three_records(mod, paid):
    report = notice(mod, paid)
    [message] = to_supplier(paid)
    [row] = rows(mod, paid)
    payment, owner = keys_of(paid)
    expected = {"notification": mod.SENT, "message_id": message["message_id"]}
    assert report == expected, (
        f"the first notice's report is not 'sent' with the provider's message id:"
        f" {report}, expected {expected}")
    got = (row["state"], row["settled_by"], row["message_id"])
    want = (mod.NOTIFIED, mod.SENT, message["message_id"])
    assert got == want, (
        "the notice's row does not say notified, settled by sending, with the"
        f" message id: (state, settled_by, message_id) {got}, expected {want}")
    key = mod.notice_key(TASK, ORDER)
    assert message["operation_key"] == row["operation_key"] == key, (
        "the message, the row and notice_key do not carry one key: message"
        f" {message['operation_key']!r}, row {row['operation_key']!r}, key {key!r}")
    assert row["operation_key"] not in (payment, owner), (
        f"the notice's key {row['operation_key']!r} is the payment's or the"
        " owner's notification's: three records, three keys")
    again = notice(mod, paid)
    expected = {"notification": mod.ALREADY, "message_id": message["message_id"]}
    assert again == expected, (
        "the notice asked for a second time did not answer 'already', with the"
        f" same message id: {again}, expected {expected}")
    assert len(to_supplier(paid)) == 1, (
        f"the notice asked twice sent {len(to_supplier(paid))} messages to the"
        " supplier: the row says it was notified, send nothing")


def test_killed_after_the_provider_accepted_the_supplier_gets_one_message(mod, paid):
    left, sent = killed_at(mod, paid, AFTER)
    statuses = [m["status"] for m in sent]
    assert statuses == [mail.QUEUED], (  # accepted, not delivered
        "killed after the provider accepted, the supplier's message was to be"
        f" queued (accepted, not delivered): statuses {statuses}")
    resume(mod, paid)
    told = to_supplier(paid)
    assert len(told) == 1, (
        f"the supplier got {len(told)} notices for one invoice: killed after the"
        " provider accepted, the resume must ask the provider by the key"
        " whether it accepted (queued counts), not whether it delivered")
    dupes = mail.duplicate_messages(paid["mail"])
    assert dupes == 0, f"the provider holds {dupes} duplicate messages (same key)"
    states = [r["state"] for r in left]
    assert states == [mod.PENDING], (  # the intent, no outcome
        "killed after the provider accepted, the notice's row was not the intent"
        f" alone (pending), written before the mail: states {states}")
    [row] = rows(mod, paid)  # the resumed process found it by asking
    got = (row["state"], row["settled_by"], row["message_id"])
    want = (mod.NOTIFIED, mod.PROBED, told[0]["message_id"])
    assert got == want, (
        "the resumed notice did not settle by asking the provider (probed):"
        f" (state, settled_by, message_id) {got}, expected {want}")


def test_killed_before_the_provider_accepted_the_resume_sends_it(mod, paid):
    """The owner was told about this order already: that mail is not the
    supplier's notice, whatever its subject says."""
    left, sent = killed_at(mod, paid, BEFORE)
    states = [r["state"] for r in left]
    assert states == [mod.PENDING], (  # written before the mail
        "killed before the provider accepted, there was no pending row: write"
        f" the intent before the mail; states {states}")
    assert sent == [], (
        f"{WORLD}killed before the provider accepted, the supplier holds {sent}")
    resume(mod, paid)
    told = to_supplier(paid)
    assert len(told) == 1, (
        f"the resume sent {len(told)} messages to the supplier, not one: the"
        " owner's mail about the order is not the supplier's notice; ask by"
        " the notice's key")
    [message] = told
    [row] = rows(mod, paid)
    got = (row["state"], row["settled_by"])
    assert got == (mod.NOTIFIED, mod.SENT), (
        "the resumed notice found nothing and sent it, so its row says notified,"
        f" settled by sending: {got}")
    assert message["operation_key"] == row["operation_key"], (
        f"the message's key {message['operation_key']!r} is not the row's"
        f" {row['operation_key']!r}")


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
        got = mod.notify_supplier(state, str(files["mail"]), TASK, ORDER, AMOUNT,
                                  CURRENCY, credential=token)
        pytest.fail("the notice under a revoked credential did not let the"
                    f" provider's refusal through: it answered {got}")
    states = [r["state"] for r in rows(mod, files)]
    assert states == [mod.PENDING], (
        "the provider refused the revoked credential, and the notice's intent"
        f" did not stay pending: states {states}")
    held = mail.messages(files["mail"])
    assert held == [], f"the revoked credential's notice reached the provider: {held}"
    with pytest.raises(broker.HolderStopped):  # the stop holds for the holder
        broker.issue(where, "paying-worker", "mail:submit", ttl=300)
        pytest.fail(f"{WORLD}the broker issued a credential to a revoked holder")
    broker.grant(where, "paying-worker", "day-rota")  # a person decides
    fresh = broker.issue(where, "paying-worker", "mail:submit", ttl=300)
    with opened(files["state"]) as state:
        report = mod.notify_supplier(state, str(files["mail"]), TASK, ORDER, AMOUNT,
                                     CURRENCY, credential=fresh)
    assert report["notification"] == mod.SENT, (
        "under the new credential the pending notice was not sent:"
        f" report {report}")
    told = to_supplier(files)
    assert len(told) == 1, (
        f"the supplier got {len(told)} notices under the new credential, not one")
    [message] = told
    used = mail.snapshot(files["mail"])["messages"][0]["credential"]
    assert used == fresh, (
        "the notice was not sent under the credential it was given (the new"
        f" one): it used {used!r}")
    key = mod.notice_key(TASK, ORDER)
    assert message["operation_key"] == key, (
        f"the notice went out under the key {message['operation_key']!r},"
        f" not its own {key!r}")


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
        got = mod.notify_supplier(state, str(paid["mail"]), task, order, amount,
                                  currency, recipient=recipient)
        pytest.fail(f"a bad notice ({task!r}, {order!r}, {amount!r},"
                    f" {currency!r}, {recipient!r}) was sent (answered {got})"
                    " instead of a ValueError or TypeError")
    assert rows(mod, paid) == [], (
        f"the refused notice wrote rows: {rows(mod, paid)}")
    recipients = [m["recipient"] for m in mail.messages(paid["mail"])]
    assert recipients == [paying.OWNER], (
        f"the refused notice sent mail: recipients {recipients}, only the"
        " owner's was there")
