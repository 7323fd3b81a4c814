"""The payment service: part of the outside world (chapters 00-04).

The payment service keeps its own SQLite file and its own answer to "did this
charge happen?". Like every service in ``crashcourse.services`` it is called
by its address, here the path of its file: each call opens the file, does its
work in one transaction and closes it. It charges an order against an approval
and binds each operation key (its idempotency key) to the exact action (order,
amount, currency).

Only ``install`` creates the file's tables. Every other call opens an
INSTALLED store (``TABLES``): a file that is missing, truncated to 0 bytes or
not a payment store is refused with ``store.StoreMissing`` and left as it is,
so a lost payment history never reads as "never paid" (issue 14).

``issue_payment`` works inside one ``BEGIN IMMEDIATE`` transaction, always in
this order:

1. historical replay: the key already names a committed payment. Same action:
   ``"already_committed"`` (no new effect, so no approval or budget is needed,
   and none is restored). Another action: ``PaymentConflict``, nothing written.
2. current authority (chapter 03, ``payments.authority``): a NEW payment
   needs an approval for exactly this order, amount and currency that is not
   revoked, not expired and granted under the current policy version, else
   ``ApprovalRefused(reason)``.
3. budget capacity (chapter 04, ``payments.budget``): if a budget policy is
   stored, the new payment must fit it, else ``BudgetExhausted(reason)``.
4. insert the payment and the evidence that explains it later.
5. commit: ``"committed"``.

The worker's completion checkpoint is NOT here: it is the worker's own record,
in the worker's own file (``crashcourse.workers.paying``), written in a
separate transaction AFTER the payment commits (the chapter 02 gap).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

from crashcourse.boundary import boundary
from crashcourse.effects import EffectConflict, check_key
from crashcourse.services.payments import authority, budget
from crashcourse.store import (
    DEFAULT_BUSY_TIMEOUT_MS,
    ensure_schema,
    immediate,
    lock_waited_out,
    opened,
    table_rows,
)
from crashcourse.validate import check_amount, check_currency, check_text

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["TABLES", "SCHEMA", "PaymentConflict",
    "ApprovalRefused", "BudgetExhausted", "PaymentServiceBusy", "check_action",
    "install", "approve", "revoke", "issue_payment", "busy_means_not_charged",
    "find_payment", "require_approval", "record_payment", "snapshot", "authority",
    "budget"]

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:  # only for hints: workers start faster without pathlib
    from pathlib import Path

TABLES = ("approvals", "payments")  # an installed store has these (opened's require)

SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    order_id     TEXT PRIMARY KEY,
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    currency     TEXT NOT NULL,
    revoked      INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1))
);
CREATE TABLE IF NOT EXISTS payments (
    key          TEXT PRIMARY KEY,   -- the operation key, bound to one action
    order_id     TEXT NOT NULL,
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    currency     TEXT NOT NULL
)
"""


class PaymentConflict(EffectConflict):
    """The key was already used for another order, amount or currency (ch. 02)."""


class ApprovalRefused(PermissionError):
    """A NEW payment without current authority; ``reason`` says why (ch. 01, 03)."""

    def __init__(self, reason: str, order_id: str):
        super().__init__(reason)
        self.reason, self.order_id = reason, order_id


class BudgetExhausted(ApprovalRefused):
    """A NEW payment the stored budget has no room for (chapter 04)."""


class PaymentServiceBusy(RuntimeError):
    """Another writer held the database past the busy timeout (chapter 04).

    Nothing was checked and nothing was charged; retry with the SAME key. There
    is no fallback path that charges without reading the budget."""


def check_action(key: object, order_id: object, amount: object, currency: object):
    """Validate a whole payment action before any transaction starts (ch. 02)."""
    check_key(key)
    check_text("order id", order_id)
    return check_amount(amount), check_currency(currency)


def install(
    path: str | Path, *, max_actions=None, currency_caps=None,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
) -> None:
    """Create the service's tables (idempotent); optionally store a budget (ch. 04).

    Bad budget values are refused before anything is written."""
    policy = None
    if max_actions is not None or currency_caps is not None:
        policy = budget.check_policy(max_actions, currency_caps)
    with busy_means_not_charged("nothing was set up"), \
            opened(path, busy_timeout_ms=busy_timeout_ms, record=True) as conn:
        ensure_schema(conn, ";".join((SCHEMA, authority.SCHEMA, budget.SCHEMA)))
    if policy is not None:
        budget.set_budget(path, *policy)


def approve(
    path: str | Path, order_id: str, amount_cents: int, currency: str,
    *, expires_unix: float | None = None, policy_version: int | None = None,
) -> None:
    """Record (or replace) the approval to pay ``order_id`` this amount (ch. 02).

    Chapter 03 adds its terms: a wall-clock expiry (None: never) and the policy
    version it is granted under (None: the service's current one)."""
    check_action("approval", order_id, amount_cents, currency)
    authority.check_terms(expires_unix, policy_version)
    with opened(path, require=TABLES, record=True) as conn, immediate(conn):
        conn.execute(
            "INSERT INTO approvals (order_id, amount_cents, currency)"
            " VALUES (:order, :amount, :currency)"
            " ON CONFLICT (order_id) DO UPDATE SET amount_cents = :amount,"
            " currency = :currency, revoked = 0",
            {"order": order_id, "amount": amount_cents, "currency": currency},
        )
        authority.write_terms(conn, order_id, expires_unix, policy_version)


def revoke(path: str | Path, order_id: str) -> None:
    """Withdraw authority for NEW payments on ``order_id``; history stays (ch. 02)."""
    check_text("order id", order_id)
    with opened(path, require=TABLES, record=True) as conn, immediate(conn):
        conn.execute(
            "UPDATE approvals SET revoked = 1 WHERE order_id = :order",
            {"order": order_id},
        )


def issue_payment(
    path: str | Path, key: str, order_id: str, amount_cents: int, currency: str,
    *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
) -> str:
    """Charge once per key: ``"committed"`` or ``"already_committed"`` (ch. 02).

    A file that is not an installed store: ``StoreMissing``, nothing charged."""
    check_action(key, order_id, amount_cents, currency)
    action = {"order_id": order_id, "amount_cents": amount_cents, "currency": currency}
    with busy_means_not_charged(f"{key!r} was not charged"), \
            opened(path, busy_timeout_ms=busy_timeout_ms, require=TABLES,
                   record=True) as conn, \
            immediate(conn):
        if replayed := find_payment(conn, key):  # 1. history: no new effect
            if replayed != action:
                raise PaymentConflict(key, replayed, action)
            return "already_committed"
        terms = require_approval(conn, action)  # 2. authority, now
        if reason := budget.shortfall(conn, amount_cents, currency):  # 3.
            raise BudgetExhausted(reason, order_id)
        record_payment(conn, key, action, terms)  # 4. insert
        boundary("payment_inserted")  # chapter 04 kills here: not yet committed
    return "committed"  # 5. the block's exit committed


@contextmanager
def busy_means_not_charged(what: str) -> Iterator[None]:
    """SQLite's "database is locked" as ``PaymentServiceBusy`` (chapter 04)."""
    try:
        yield
    except sqlite3.OperationalError as error:
        if not lock_waited_out(error):
            raise  # a real fault, not a wait that ran out
        raise PaymentServiceBusy(f"payment service busy; {what}") from error


def find_payment(conn: sqlite3.Connection, key: str) -> dict | None:
    """The action a committed key was used for, or None (chapter 02)."""
    row = conn.execute(
        "SELECT order_id, amount_cents, currency FROM payments WHERE key = :key",
        {"key": key},
    ).fetchone()
    return dict(row) if row else None


def require_approval(conn: sqlite3.Connection, action: dict) -> dict:
    """Raise ``ApprovalRefused`` unless this exact action is currently approved;
    return the approval's terms (expiry, policy version) for the evidence row."""
    row = authority.read_approval(conn, action["order_id"])
    now, policy = time.time(), authority.current_policy(conn)
    reason = authority.refusal_reason(row, action, now, policy)
    if reason:
        raise ApprovalRefused(reason, action["order_id"])
    return row


def record_payment(conn, key: str, action: dict, terms: dict) -> None:
    """Insert the payment and the terms it was allowed under, one transaction."""
    conn.execute(
        "INSERT INTO payments (key, order_id, amount_cents, currency)"
        " VALUES (:key, :order_id, :amount_cents, :currency)",
        {"key": key, **action},
    )
    authority.record_evidence(conn, key, terms)


def snapshot(path: str | Path) -> dict:
    """Every durable row of the service a grader reads: payments, approvals.

    Introduced in chapter 02."""
    with opened(path, require=TABLES, record=True) as conn:
        return {
            "payments": table_rows(conn, "payments"),
            "approvals": table_rows(conn, "approvals"),
        }
