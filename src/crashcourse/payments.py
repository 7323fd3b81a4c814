"""The payment service and the worker's checkpoint (chapters 01-02).

The payment service is part of the outside world: its own SQLite file, its own
answer to "did this charge happen?". It charges an order against an approval
and binds each idempotency key to the exact action (order, amount, currency).

``issue_payment`` checks, inside one ``BEGIN IMMEDIATE`` transaction and in
this order:

1. historical replay: the key already names a committed payment. Same action:
   ``"already_committed"`` (no new effect, so no approval is needed). Another
   action: ``PaymentConflict``, nothing written.
2. current authority: a NEW payment needs an approval for exactly this order,
   amount and currency that is not revoked, else ``ApprovalRefused``.
3. insert the payment and commit: ``"committed"``.

The worker's completion checkpoint is a different table, written by the worker
in a separate transaction AFTER the payment commits. That gap is on purpose:
it is the gap chapter 02 kills the worker in.
"""

from __future__ import annotations

import math
import re
import sqlite3
from pathlib import Path

from crashcourse.effects import EffectConflict, check_key
from crashcourse.store import ensure_schema, immediate, opened, table_rows

SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    order_id     TEXT PRIMARY KEY,
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    currency     TEXT NOT NULL,
    revoked      INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1))
);
CREATE TABLE IF NOT EXISTS payments (
    key          TEXT PRIMARY KEY,   -- the idempotency key, bound to one action
    order_id     TEXT NOT NULL,
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    currency     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    task     TEXT PRIMARY KEY,       -- the worker's own record, not the service's
    key      TEXT NOT NULL,
    outcome  TEXT NOT NULL
)
"""

CURRENCY = re.compile(r"[A-Z]{3}")
MAX_CENTS = 10**12  # far above any invoice; stops overflow-sized input early


class PaymentConflict(EffectConflict):
    """The key was already used for another order, amount or currency."""


class ApprovalRefused(PermissionError):
    """A NEW payment without current authority; ``reason`` says why."""

    def __init__(self, reason: str, order_id: str):
        super().__init__(reason)
        self.reason, self.order_id = reason, order_id


def check_amount(amount_cents: object) -> int:
    """Positive integer cents; bool, float, NaN and huge values are refused."""
    if isinstance(amount_cents, bool) or not isinstance(amount_cents, int):
        shown = "NaN" if isinstance(amount_cents, float) and math.isnan(amount_cents) else amount_cents
        raise TypeError(f"amount must be integer cents, got {shown!r}")
    if not 0 < amount_cents <= MAX_CENTS:
        raise ValueError(f"amount must be between 1 and {MAX_CENTS} cents")
    return amount_cents


def check_currency(currency: object) -> str:
    """Three upper-case letters, as in ISO 4217 (``USD``, ``EUR``)."""
    if not isinstance(currency, str) or not CURRENCY.fullmatch(currency):
        raise ValueError(f"currency must be three upper-case letters, got {currency!r}")
    return currency


def check_action(key: object, order_id: object, amount: object, currency: object):
    """Validate a whole payment action before any transaction starts."""
    check_key(key)
    if not isinstance(order_id, str) or not order_id.strip():
        raise ValueError("order id must be a non-empty string")
    return check_amount(amount), check_currency(currency)


def initialize(path: str | Path) -> None:
    """Create the payment service's tables in ``path`` (idempotent)."""
    with opened(path) as conn:
        ensure_schema(conn, SCHEMA)


def approve(path: str | Path, order_id: str, amount_cents: int, currency: str) -> None:
    """Record (or replace) the approval to pay ``order_id`` this amount."""
    check_action("approval", order_id, amount_cents, currency)
    with opened(path) as conn, immediate(conn):
        conn.execute(
            "INSERT INTO approvals (order_id, amount_cents, currency)"
            " VALUES (:order, :amount, :currency)"
            " ON CONFLICT (order_id) DO UPDATE SET amount_cents = :amount,"
            " currency = :currency, revoked = 0",
            {"order": order_id, "amount": amount_cents, "currency": currency},
        )


def revoke(path: str | Path, order_id: str) -> None:
    """Withdraw authority for NEW payments on ``order_id``; history stays."""
    with opened(path) as conn, immediate(conn):
        conn.execute(
            "UPDATE approvals SET revoked = 1 WHERE order_id = :order",
            {"order": order_id},
        )


def issue_payment(
    path: str | Path, key: str, order_id: str, amount_cents: int, currency: str
) -> str:
    """Charge once per key: ``"committed"`` or ``"already_committed"``."""
    check_action(key, order_id, amount_cents, currency)
    action = {"order_id": order_id, "amount_cents": amount_cents, "currency": currency}
    with opened(path) as conn, immediate(conn):
        if replayed := find_payment(conn, key):
            if replayed != action:
                raise PaymentConflict(key, replayed, action)
            return "already_committed"
        require_approval(conn, action)
        conn.execute(
            "INSERT INTO payments (key, order_id, amount_cents, currency)"
            " VALUES (:key, :order_id, :amount_cents, :currency)",
            {"key": key, **action},
        )
    return "committed"


def find_payment(conn: sqlite3.Connection, key: str) -> dict | None:
    """The action a committed key was used for, or None."""
    row = conn.execute(
        "SELECT order_id, amount_cents, currency FROM payments WHERE key = :key",
        {"key": key},
    ).fetchone()
    return dict(row) if row else None


def require_approval(conn: sqlite3.Connection, action: dict) -> None:
    """Raise ``ApprovalRefused`` unless this exact action is currently approved."""
    row = conn.execute(
        "SELECT amount_cents, currency, revoked FROM approvals WHERE order_id = :order",
        {"order": action["order_id"]},
    ).fetchone()
    if row is None or (row["amount_cents"], row["currency"]) != (
        action["amount_cents"],
        action["currency"],
    ):
        raise ApprovalRefused("not_approved", action["order_id"])
    if row["revoked"]:
        raise ApprovalRefused("approval_revoked", action["order_id"])


def save_checkpoint(path: str | Path, task: str, key: str, outcome: str) -> None:
    """The worker records that ``task`` finished (its own table, own transaction)."""
    with opened(path) as conn, immediate(conn):
        conn.execute(
            "INSERT INTO checkpoints (task, key, outcome) VALUES (:task, :key, :outcome)"
            " ON CONFLICT (task) DO UPDATE SET key = :key, outcome = :outcome",
            {"task": task, "key": key, "outcome": outcome},
        )


def load_checkpoint(path: str | Path, task: str) -> dict | None:
    """The worker's completion record for ``task``, or None."""
    with opened(path) as conn:
        row = conn.execute(
            "SELECT task, key, outcome FROM checkpoints WHERE task = :task",
            {"task": task},
        ).fetchone()
    return dict(row) if row else None


def snapshot(path: str | Path) -> dict:
    """Every durable row the grader reads: payments, checkpoints, approvals."""
    with opened(path) as conn:
        return {
            "payments": table_rows(conn, "payments"),
            "checkpoints": table_rows(conn, "checkpoints"),
            "approvals": table_rows(conn, "approvals"),
        }
