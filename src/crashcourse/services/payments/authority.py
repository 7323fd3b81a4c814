"""Authority now versus history: the terms of an approval (chapter 03).

An approval in the payment service (``crashcourse.services.payments``) says
what may be paid (order, amount, currency) and whether it was revoked.
Chapter 03 adds two terms that can each change on their own, also while no
worker is running:

* a wall-clock expiry, stored as ``time.time()`` seconds (NULL: never). It is
  compared with the clock of whichever process asks, so it is only as good as
  that clock: a clock set back revives an expired approval.
* the policy version the approval was granted under. The service has one
  current version; moving it makes every older approval stop authorizing NEW
  payments until it is granted again.

These terms decide NEW effects only. When a payment commits, the terms it was
allowed under are copied into ``payment_evidence`` beside it, so an old payment
can still be explained after its approval was revoked, expired or outdated.
"""

from __future__ import annotations

import math
import sqlite3
import time

from crashcourse.store import immediate, opened
from crashcourse.validate import check_count

# the payment service's file, installed by payments.install (no import: a cycle)
PAYMENTS = ("payments",)
TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:  # only for hints: workers start faster without pathlib
    from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS approval_terms (
    order_id       TEXT PRIMARY KEY REFERENCES approvals (order_id),
    expires_unix   REAL,             -- wall-clock seconds (time.time()), NULL = never
    policy_version INTEGER NOT NULL  -- the policy the approval was granted under
);
CREATE TABLE IF NOT EXISTS service_policy (
    id      INTEGER PRIMARY KEY CHECK (id = 1),   -- one current version
    version INTEGER NOT NULL CHECK (version >= 1)
);
CREATE TABLE IF NOT EXISTS payment_evidence (
    key            TEXT PRIMARY KEY REFERENCES payments (key),
    policy_version INTEGER NOT NULL,  -- what the payment was allowed under
    expires_unix   REAL,
    committed_unix REAL NOT NULL
)
"""


def check_terms(expires_unix: object, policy_version: object) -> None:
    """Expiry: None or finite seconds; policy version: None or 1..10**6."""
    if expires_unix is not None and (
        isinstance(expires_unix, bool)
        or not isinstance(expires_unix, int | float)
        or not math.isfinite(expires_unix)
    ):
        raise TypeError(f"expires_unix must be finite seconds, got {expires_unix!r}")
    if policy_version is not None:
        check_count("policy_version", policy_version)
        if policy_version < 1:
            raise ValueError("policy_version starts at 1")


def current_policy(conn: sqlite3.Connection) -> int:
    """The service's policy version: 1 until ``set_policy_version`` moves it."""
    row = conn.execute("SELECT version FROM service_policy WHERE id = 1").fetchone()
    return row["version"] if row else 1


def write_terms(conn, order_id: str, expires_unix, policy_version) -> None:
    """Store an approval's terms; a None version means the current one."""
    conn.execute(
        "INSERT INTO approval_terms (order_id, expires_unix, policy_version)"
        " VALUES (:order, :expires, :version)"
        " ON CONFLICT (order_id) DO UPDATE"
        " SET expires_unix = :expires, policy_version = :version",
        {"order": order_id, "expires": expires_unix,
         "version": policy_version or current_policy(conn)},
    )


def set_expiry(path: str | Path, order_id: str, expires_unix: float | None) -> None:
    """Change only an approval's wall-clock expiry (chapter 03)."""
    check_terms(expires_unix, None)
    with opened(path, require=PAYMENTS, record=True) as conn, immediate(conn):
        conn.execute(
            "UPDATE approval_terms SET expires_unix = :expires WHERE order_id = :order",
            {"order": order_id, "expires": expires_unix},
        )


def set_policy_version(path: str | Path, version: int) -> None:
    """Move the service to policy ``version`` (chapter 03); history stays."""
    check_terms(None, version)
    with opened(path, require=PAYMENTS, record=True) as conn, immediate(conn):
        conn.execute(
            "INSERT INTO service_policy (id, version) VALUES (1, :version)"
            " ON CONFLICT (id) DO UPDATE SET version = :version",
            {"version": version},
        )


def read_approval(conn: sqlite3.Connection, order_id: str) -> dict | None:
    """An order's approval joined with its terms, or None."""
    row = conn.execute(
        "SELECT a.amount_cents, a.currency, a.revoked,"
        "       t.expires_unix, coalesce(t.policy_version, 1) AS policy_version"
        " FROM approvals AS a LEFT JOIN approval_terms AS t USING (order_id)"
        " WHERE a.order_id = :order",
        {"order": order_id},
    ).fetchone()
    return dict(row) if row else None


def refusal_reason(approval, action, now: float, policy: int) -> str | None:
    """Why ``approval`` does not authorize ``action`` at ``now`` under ``policy``,
    or None. The checks run in this fixed order (chapter 03)."""
    if approval is None or (approval["amount_cents"], approval["currency"]) != (
        action["amount_cents"], action["currency"]
    ):
        return "not_approved"
    if approval["revoked"]:
        return "approval_revoked"
    if approval["expires_unix"] is not None and now >= approval["expires_unix"]:
        return "approval_expired"
    if approval["policy_version"] != policy:
        return "policy_changed"
    return None


def record_evidence(conn: sqlite3.Connection, key: str, terms: dict) -> None:
    """Keep the terms a payment was allowed under, in the payment's transaction."""
    conn.execute(
        "INSERT INTO payment_evidence"
        " (key, policy_version, expires_unix, committed_unix)"
        " VALUES (:key, :version, :expires, :now)",
        {"key": key, "version": terms["policy_version"],
         "expires": terms["expires_unix"], "now": time.time()},
    )


def payment_history(path: str | Path, key: str) -> dict | None:
    """A committed payment with the terms it was committed under (chapter 03)."""
    with opened(path, require=PAYMENTS, record=True) as conn:
        row = conn.execute(
            "SELECT p.key, p.order_id, p.amount_cents, p.currency,"
            "       e.policy_version, e.expires_unix, e.committed_unix"
            " FROM payments AS p LEFT JOIN payment_evidence AS e USING (key)"
            " WHERE p.key = :key",
            {"key": key},
        ).fetchone()
    return dict(row) if row else None
