"""Exercise 09.2, answered: tell the supplier once (chapter 09).

Once an invoice is paid, the supplier gets a notification that the money is
on its way: a second side effect after the payment, with an operation key of
its own and a state of its own in the worker's file (``supplier_notices``).
The worker's checkpoint (``paying.load_checkpoint``) says "paid"; only this
table says "the supplier was told".
"""

from __future__ import annotations

import sqlite3

from crashcourse.effects import operation_key
from crashcourse.services import mail
from crashcourse.store import ensure_schema, immediate, sql_list, table_rows
from crashcourse.validate import check_amount, check_currency, check_text
from crashcourse.workers import paying

SUPPLIER = "orders@supplier.example"
PENDING, NOTIFIED = "pending", "notified"  # the notification's own state
SENT, PROBED, ALREADY = "sent", "probe", "already_notified"  # how it settled

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS supplier_notices (
    task          TEXT PRIMARY KEY,      -- one notice per paid task
    operation_key TEXT NOT NULL UNIQUE,  -- its own key: not the payment's
    recipient     TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN {sql_list((PENDING, NOTIFIED))}),
    message_id    INTEGER,               -- the provider's id, once recorded
    settled_by    TEXT                   -- sent, or found by the probe
)
"""


def install(conn: sqlite3.Connection) -> None:
    """Given: create ``supplier_notices`` in the worker's own file."""
    ensure_schema(conn, SCHEMA)


def notices(conn: sqlite3.Connection) -> list[dict]:
    """Given: every row of ``supplier_notices``; none before it exists. A read."""
    made = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                        " AND name = 'supplier_notices'").fetchone()
    return table_rows(conn, "supplier_notices") if made else []


def notice_key(task: str, order: str, recipient: str = SUPPLIER) -> str:
    """The notice's operation key: the same task, order and recipient, same key."""
    return operation_key(task, 3, "notify_supplier", {"to": recipient, "order": order})


def refuse_unless_notifiable(state: sqlite3.Connection, task: str, order: str,
                             amount: int, currency: str, recipient: str) -> None:
    """ValueError unless the arguments are well formed and ``task`` is paid."""
    check_text("task", task)
    check_text("order", order)
    check_amount(amount)
    check_currency(currency)
    if "@" not in str(recipient):
        raise ValueError(f"not an address: {recipient!r}")
    if paying.load_checkpoint(state, task) is None:
        raise ValueError(f"task {task!r} is not paid: there is nothing to notify")


def notify_supplier(state: sqlite3.Connection, mail_path: str, task: str,
                    order: str, amount: int, currency: str, *,
                    recipient: str = SUPPLIER,
                    credential: str | None = None) -> dict:
    """Tell the supplier that ``task`` paid ``order``: at most once per notice
    key, given one live notifier (the provider takes no key of its own)."""
    refuse_unless_notifiable(state, task, order, amount, currency, recipient)
    install(state)
    notice = {"task": task, "key": notice_key(task, order, recipient),
              "recipient": recipient}
    row = record_intent(state, notice)
    if row is not None and row["state"] == NOTIFIED:
        return {"notification": ALREADY, "message_id": row["message_id"]}
    # A pending row: the last run died after its intent. Ask the provider by
    # key whether it ACCEPTED the notice (queued counts), before sending.
    found, message_id = (probe(mail_path, notice["key"], recipient) if row
                         else (False, None))
    if found:
        settled = PROBED
    else:
        settled = SENT
        message_id = send(mail_path, notice, order, amount, currency, credential)
    record_notified(state, notice, message_id, settled)
    return {"notification": settled, "message_id": message_id}


def record_intent(state: sqlite3.Connection, notice: dict) -> sqlite3.Row | None:
    """The notice's row as the last run left it (None: there was none); a
    PENDING row is written first, before anything leaves the process."""
    with immediate(state):
        row = state.execute("SELECT state, message_id FROM supplier_notices"
                            " WHERE task = :task", notice).fetchone()
        if row is None:
            state.execute(
                "INSERT INTO supplier_notices (task, operation_key, recipient, state)"
                f" VALUES (:task, :key, :recipient, '{PENDING}')", notice)
    return row


def send(mail_path: str, notice: dict, order: str, amount: int, currency: str,
         credential: str | None) -> int:
    """Hand the notice to the provider, its key in the header; the provider's id."""
    accepted = mail.submit(
        mail_path, notice["recipient"], f"payment sent: {order}",
        f"{order}: {amount} cents {currency} paid ({notice['task']})",
        {mail.KEY_HEADER: notice["key"]}, credential=credential)
    return accepted["message_id"]


def record_notified(state: sqlite3.Connection, notice: dict, message_id: int,
                    settled: str) -> None:
    """The pending notice settled: NOTIFIED, with the provider's id and how."""
    with immediate(state):
        state.execute(
            f"UPDATE supplier_notices SET state = '{NOTIFIED}',"
            " message_id = :message_id, settled_by = :settled"
            " WHERE task = :task",
            {"task": notice["task"], "message_id": message_id, "settled": settled})


def probe(mail_path: str, key: str, recipient: str) -> tuple[bool, int | None]:
    """Whether the provider accepted the notice under ``key`` (queued counts,
    whatever the recipient), and the provider's id for it."""
    found, seen = mail.probe_sent(mail_path, key)
    return found, seen["message_id"] if found else None
