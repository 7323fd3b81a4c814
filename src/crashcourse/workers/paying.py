"""The worker's side of paying an invoice (chapters 00-04).

Two records answer two questions (chapter 02). The payment service, called by
the path of its file, answers "was this charge made?". The worker's own store,
an open connection to the worker's own file, holds its *checkpoint*: "did this
task finish, and under which key?". They are different files written in
different transactions, so a kill between the two leaves a payment with no
checkpoint: the gap every chapter from 00 to 04 kills the worker in.

``pay_then_checkpoint`` is the one sequence both payment workers run
(``pay_invoice`` derives its key, ``charge`` is given one), with the registered
boundaries ``before_payment``, ``after_payment`` and ``after_checkpoint``
(``payment_inserted`` is inside the service). ``EXITS`` is their one table of
exit statuses; their shared command line is ``workers.payment_command``.

Chapter 09 adds a second side effect after the payment: ``notify_owner``
mails the shop's owner under an operation key of its own, with its own state
in the worker's file (``notifications``: pending, then notified). "Paid" is
not "notified": a kill between the provider accepting the mail
(``after_notify_accepted``) and the worker recording it
(``after_notify_recorded``) leaves a pending row, and the resumed worker asks
the provider by key before it sends anything (``before_notify_sent``: asked,
not yet sent; two live notifiers held there both send).
"""

from __future__ import annotations

import sqlite3

from crashcourse.boundary import boundary
from crashcourse.effects import operation_key
from crashcourse.services import payments
from crashcourse.store import (
    check_backend,
    ensure_schema,
    immediate,
    opened,
    sql_list,
    table_exists,
    table_rows,
    tables,
)
from crashcourse.validate import check_text
from crashcourse.workers.options import BAD_INPUT, OWN_FILE

RUNS_ON = OWN_FILE  # the databases install() accepts (store.check_backend)

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:  # only for hints: workers start faster without pathlib
    from pathlib import Path

PENDING, NOTIFIED = "pending", "notified"  # a notification's own state
SENT, PROBED, ALREADY = "sent", "probe", "already_notified"  # how it settled
OWNER = "owner@shop.example"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS checkpoints (
    task     TEXT PRIMARY KEY,       -- the worker's own record, not the service's
    key      TEXT NOT NULL,          -- the operation key it paid under
    outcome  TEXT NOT NULL           -- what the service answered
);
CREATE TABLE IF NOT EXISTS notifications (
    task          TEXT PRIMARY KEY,      -- one owner notification per paid task
    operation_key TEXT NOT NULL UNIQUE,  -- its own key, not the payment's
    recipient     TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN {sql_list((PENDING, NOTIFIED))}),
    message_id    INTEGER,               -- the provider's id, once recorded
    settled_by    TEXT                   -- sent, or found by the probe
)
"""
TABLES = ("checkpoints", "notifications")  # what SCHEMA creates

# A refused NEW payment, a key bound to another action and a locked service are
# outcomes, not crashes: each has its own status, and none charged anything.
# Bad input (or a payment service not installed) is refused before anything.
# "held": another process kept the write lock of the worker's own file (or of
# the --notify mail provider's) past the busy timeout, a holder paused
# mid-write (issue 35): the transaction that waited wrote nothing, and a rerun
# under the same key is safe (``options.one_line_errors``'s ``held``).
EXITS = {"committed": 0, "already_committed": 0, "bad_input": BAD_INPUT,
         "refused": 3, "conflict": 4, "busy": 5, "held": 6}
PAID = ("committed", "already_committed")  # the outcomes after which to notify


def install(conn: sqlite3.Connection) -> None:
    """Create the worker's checkpoint table in its own file (chapter 02).

    A resumed worker finds its tables made: then this is one read, with no
    write transaction to wait for."""
    check_backend(conn, RUNS_ON, __name__)
    if own_tables(conn) != set(TABLES):
        ensure_schema(conn, SCHEMA)


def own_tables(conn: sqlite3.Connection) -> set[str]:
    """Which of the worker's tables its file holds already; a read."""
    return tables(conn) & set(TABLES)


def save_checkpoint(conn: sqlite3.Connection, task: str, key: str,
                    outcome: str) -> None:
    """Record that ``task`` finished, in its own transaction (chapter 02)."""
    with immediate(conn):
        conn.execute(
            "INSERT INTO checkpoints (task, key, outcome)"
            " VALUES (:task, :key, :outcome)"
            " ON CONFLICT (task) DO UPDATE SET key = :key, outcome = :outcome",
            {"task": task, "key": key, "outcome": outcome},
        )


def load_checkpoint(conn: sqlite3.Connection, task: str) -> dict | None:
    """The worker's completion record for ``task``, or None (chapter 02)."""
    row = conn.execute(
        "SELECT task, key, outcome FROM checkpoints WHERE task = :task",
        {"task": task},
    ).fetchone()
    return dict(row) if row else None


def checkpoints(conn: sqlite3.Connection) -> list[dict]:
    """Every checkpoint row of the worker's file; none before it installed its
    table. A read: it never takes the write lock (chapter 02)."""
    made = own_tables(conn)
    return table_rows(conn, "checkpoints") if "checkpoints" in made else []


def snapshot(service: str | Path, state: str | Path) -> dict:
    """What a grader reads after a payment run, from two files: the service's
    payments and approvals, and the worker's own checkpoints (chapter 02)."""
    with opened(state) as conn:
        rows = checkpoints(conn)
    return {**payments.snapshot(service), "checkpoints": rows}


def recount(service: str | Path, state: str | Path) -> dict:
    """Payments and checkpoints by ``count(*)``, each file opened again: a
    second read a grader compares with ``snapshot``'s rows (chapter 02)."""
    with opened(service) as conn:
        paid = conn.execute("SELECT count(*) FROM payments").fetchone()[0]
    with opened(state) as conn:
        noted = 0
        if table_exists(conn, "checkpoints"):  # killed before it installed: none
            noted = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    return {"payments": paid, "checkpoints": noted}


def pay_then_checkpoint(
    state: sqlite3.Connection, service: str, task: str, key: str,
    order: str, amount: int, currency: str,
    *, busy_timeout_ms: int = payments.DEFAULT_BUSY_TIMEOUT_MS,
) -> dict:
    """Pay under ``key`` at the service, then checkpoint in ``state``.

    Returns the worker's report; its ``outcome`` names the exit status in
    ``EXITS``. Introduced in chapter 00; the refusals in chapters 03-04."""
    boundary("before_payment")
    try:
        outcome = payments.issue_payment(
            service, key, order, amount, currency, busy_timeout_ms=busy_timeout_ms)
    except payments.ApprovalRefused as refused:  # BudgetExhausted included
        return {"outcome": "refused", "reason": refused.reason}
    except payments.PaymentConflict:
        return {"outcome": "conflict"}
    except payments.PaymentServiceBusy as busy:
        return {"outcome": "busy", "reason": str(busy)}
    boundary("after_payment")
    save_checkpoint(state, task, key, outcome)
    boundary("after_checkpoint")
    return {"outcome": outcome}


def notifications(conn: sqlite3.Connection) -> list[dict]:
    """Every notification row of the worker's file; a read (chapter 09)."""
    made = own_tables(conn)
    return table_rows(conn, "notifications") if "notifications" in made else []


def notify_owner(state: sqlite3.Connection, mail_path: str, task: str, order: str,
                 amount: int, currency: str, *, recipient: str = OWNER,
                 credential: str | None = None) -> dict:
    """Tell the owner that ``task`` paid ``order``: at most once per key,
    given one live notifier (chapter 09).

    Intent first: a ``pending`` row with the notification's own operation key,
    then the mail, then ``notified``. A pending row found on a later run means
    the last one died in between: the provider is asked by key
    (``mail.probe_sent``) and a mail it already accepted is recorded, not sent
    again. The premise is ONE live notifier: the provider takes no key, so two
    runs alive at once (or one paused between its probe and its send, then
    resumed beside a replacement) both find ``pending``, both probe before
    either sends, and both send; the key header makes that second mail
    findable, not impossible. Refused (ValueError, nothing written) unless the
    task is paid."""
    from crashcourse.services import mail  # here: only --notify runs need it

    check_text("task", task)
    if "@" not in str(recipient):
        raise ValueError(f"not an address: {recipient!r}")
    if load_checkpoint(state, task) is None:
        raise ValueError(f"task {task!r} is not paid: there is nothing to notify")
    key = operation_key(task, 2, "notify_owner", {"to": recipient, "order": order})
    where = {"task": task, "key": key, "recipient": recipient}
    with immediate(state):
        row = state.execute("SELECT state, message_id FROM notifications"
                            " WHERE task = :task", where).fetchone()
        if row is None:
            state.execute(
                "INSERT INTO notifications (task, operation_key, recipient, state)"
                f" VALUES (:task, :key, :recipient, '{PENDING}')", where)
    if row is not None and row["state"] == NOTIFIED:
        return {"notification": ALREADY, "message_id": row["message_id"]}
    found, seen = mail.probe_sent(mail_path, key) if row else (False, {})
    if found:
        settled, message_id = PROBED, seen["message_id"]
    else:
        boundary("before_notify_sent")  # asked (or first), not yet sent
        accepted = mail.submit(
            mail_path, recipient, f"paid: {order}",
            f"{task} paid {order}: {amount} cents {currency}",
            {mail.KEY_HEADER: key}, credential=credential)
        boundary("after_notify_accepted")
        settled, message_id = SENT, accepted["message_id"]
    with immediate(state):
        state.execute(
            f"UPDATE notifications SET state = '{NOTIFIED}', message_id = :message_id,"
            " settled_by = :settled WHERE task = :task",
            {"task": task, "message_id": message_id, "settled": settled})
    boundary("after_notify_recorded")
    return {"notification": settled, "message_id": message_id}
