"""Exercise 09.2: tell the supplier once (chapter 09).

Once an invoice is paid, the supplier gets a notification that the money is
on its way: a second side effect after the payment, with an operation key of
its own and a state of its own in the worker's file (``supplier_notices``).
The worker's checkpoint (``paying.load_checkpoint``) says "paid"; only this
table says "the supplier was told".

Build it from what chapters 02 and 07 built: a record written before the
effect, and a probe that asks the target by key (the tests unplug
``paying.notify_owner``, the runtime's own notification). The provider is
called by its address, the path of its file: ``mail.submit`` accepts a
message into its queue, ``mail.probe_sent`` asks it by operation key.

The provider takes no key of its own, so the promise has a premise: ONE live
notifier. Two processes alive at once both find the notice pending, both ask
before either sends, and both send; the header makes the second findable.
"""

from __future__ import annotations

import sqlite3

from crashcourse import validate  # noqa: F401  (check_amount, check_text, ...)
from crashcourse.effects import operation_key  # noqa: F401
from crashcourse.services import mail  # noqa: F401  (called by path)
from crashcourse.store import ensure_schema, immediate, sql_list, table_rows  # noqa
from crashcourse.workers import paying  # noqa: F401  (load_checkpoint)

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
    """The notice's operation key, from ``effects.operation_key`` with step 3
    and action ``"notify_supplier"``: the same task, order and recipient give
    the same key in any process, and it is neither the payment's key nor the
    owner's notification's.
    """
    raise NotImplementedError("exercise 09.2: give the notice its own key")


def notify_supplier(state: sqlite3.Connection, mail_path: str, task: str,
                    order: str, amount: int, currency: str, *,
                    recipient: str = SUPPLIER,
                    credential: str | None = None) -> dict:
    """Tell the supplier that ``task`` paid ``order``: at most once per notice
    key, given one live notifier, wherever the process running it is killed.

    ``state`` is the worker's own file (the connection); ``mail_path`` the
    provider's. Intent first: a PENDING row under ``notice_key`` before the
    mail, then the mail (the key in the ``mail.KEY_HEADER`` header, the
    ``credential`` presented), then NOTIFIED with the provider's
    ``message_id`` and ``settled_by``. On a later run: NOTIFIED, return
    ALREADY and send nothing; PENDING, ask the provider by key first and
    record what it accepted (PROBED) or send it now (SENT). Returns
    ``{"notification": SENT | PROBED | ALREADY, "message_id": int}``.

    Refused (``ValueError``, or ``TypeError`` for a non-integer amount) with
    nothing written and nothing sent: a task with no payment checkpoint, a
    recipient that is not an address, a blank task or order, an amount that
    is not positive whole cents, a currency that is not three capitals.
    """
    raise NotImplementedError("exercise 09.2: probe before you send")
