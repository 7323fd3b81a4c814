"""The credential broker: short-lived credentials a person can revoke (chapter 09).

The out-of-band stop. The broker keeps its own SQLite file and is called by
its path, like every service. It ISSUES a credential to a holder for a scope
(space-separated words such as ``"drive:rename mail:submit"``) and a short
lifetime on the wall clock; a person REVOKES it; a guarded service VERIFIES
it inside its own write transaction, so the answer and the effect commit
together. After ``revoke`` has returned, every later call made with that
credential is refused, whatever the worker holding it is doing: nobody asks
the worker.

``verify`` takes the broker's write lock (and writes nothing), so it never
overlaps a revocation: a credential accepted at instant ``verified_at`` was
accepted before ``revoked_at``, or it was refused. A service stamps the
effect with that instant, and "effects after the revocation" is a comparison
of two columns.

The service side: ``guard`` (called by the service's ``install``) keeps the
broker's path in the service's own file; ``admit`` checks a write against it
inside the write's transaction, and ``note_refusal`` logs a refusal in the
service's own ``refusals`` table after the rollback. A service installed
without a broker ignores credentials, as in chapters 00-08.

Only ``install`` creates the broker's tables: every other call, a guarded
service's check included, refuses a broker file that is missing, empty or not
installed (``store.StoreMissing``), so a lost broker never accepts or refuses
a credential from an empty file (issue 14).
"""

from __future__ import annotations

import math
import os
import re
import sqlite3

from crashcourse.store import (
    StoreMissing,
    connect,
    ensure_schema,
    immediate,
    opened,
    table_rows,
)
from crashcourse.validate import check_text, clock

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:  # only for hints: workers start faster without pathlib
    from pathlib import Path

MAX_TTL = 900.0  # fifteen minutes: a credential lives for one task, not a day
SCOPE_WORD = re.compile(r"[a-z]+:[a-z_]+")
MISSING, UNKNOWN, REVOKED = "missing", "unknown", "revoked"
EXPIRED, WRONG_SCOPE = "expired", "wrong_scope"
REASONS = (MISSING, UNKNOWN, REVOKED, EXPIRED, WRONG_SCOPE)
TABLES = ("credentials", "revocations")  # an installed broker (opened's require)

SCHEMA = """
CREATE TABLE IF NOT EXISTS credentials (
    token      TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    scope      TEXT NOT NULL,        -- space-separated: what it may do
    issued_at  REAL NOT NULL,
    expires_at REAL NOT NULL         -- wall clock: other processes read it
);
CREATE TABLE IF NOT EXISTS revocations (
    token      TEXT PRIMARY KEY REFERENCES credentials (token),  -- once each
    who        TEXT NOT NULL,
    revoked_at REAL NOT NULL
)
"""

# In each guarded service's own file.
GUARD_SCHEMA = """
CREATE TABLE IF NOT EXISTS guard (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    broker TEXT NOT NULL             -- the broker's file: every write asks it
);
CREATE TABLE IF NOT EXISTS refusals (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    action     TEXT NOT NULL,
    credential TEXT,
    reason     TEXT NOT NULL,
    at         REAL NOT NULL
)
"""


class CredentialRefused(PermissionError):
    """A call made without a valid credential; ``reason`` says why (chapter 09)."""

    def __init__(self, reason: str):
        super().__init__(f"credential refused: {reason}")
        self.reason = reason


def install(path: str | Path) -> None:
    """Create the broker's tables in its own file (chapter 09)."""
    with opened(path, record=True) as conn:
        ensure_schema(conn, SCHEMA)


def _scope(scope: object) -> str:
    words = check_text("scope", scope).split()
    if not all(SCOPE_WORD.fullmatch(word) for word in words):
        raise ValueError(f"scope must be words like 'drive:rename', got {scope!r}")
    return " ".join(words)


def issue(path: str | Path, holder: str, scope: str, ttl: float,
          now: float | None = None) -> str:
    """A new credential for ``holder``, valid for ``scope`` during ``ttl``
    seconds (0 < ttl <= ``MAX_TTL``); its token (chapter 09)."""
    import secrets  # here: the workers that only present a token never need it

    check_text("holder", holder)
    scope = _scope(scope)
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not (
            math.isfinite(ttl) and 0 < ttl <= MAX_TTL):
        raise ValueError(f"ttl must be seconds in (0, {MAX_TTL:.0f}], got {ttl!r}")
    token = f"cred-{secrets.token_hex(12)}"
    with opened(path, require=TABLES, record=True) as conn, immediate(conn):
        at = clock(now)
        conn.execute(
            "INSERT INTO credentials (token, holder, scope, issued_at, expires_at)"
            " VALUES (:token, :holder, :scope, :at, :expires_at)",
            {"token": token, "holder": holder, "scope": scope, "at": at,
             "expires_at": at + ttl},
        )
    return token


def revoke(path: str | Path, token: str, who: str, now: float | None = None) -> float:
    """Revoke ``token``: every later call with it is refused. Returns
    ``revoked_at``. An unknown token (``LookupError``) or one already revoked
    (``ValueError``) is refused and nothing is written (chapter 09)."""
    check_text("token", token)
    check_text("who", who)
    with opened(path, require=TABLES, record=True) as conn, immediate(conn):
        at = clock(now)
        if conn.execute("SELECT 1 FROM credentials WHERE token = :token",
                        {"token": token}).fetchone() is None:
            raise LookupError(f"no credential {token!r} at this broker")
        done = conn.execute("SELECT who, revoked_at FROM revocations"
                            " WHERE token = :token", {"token": token}).fetchone()
        if done is not None:
            raise ValueError(f"credential {token!r} was already revoked by "
                             f"{done['who']}")
        conn.execute(
            "INSERT INTO revocations (token, who, revoked_at)"
            " VALUES (:token, :who, :at)",
            {"token": token, "who": who, "at": at},
        )
    return at


def verify(path: str | Path, token: str | None, scope: str,
           now: float | None = None) -> dict:
    """The credential's holder, scope and the instant it was accepted
    (``verified_at``), or ``CredentialRefused``: missing, unknown, revoked,
    expired or wrong scope (chapter 09)."""
    if not token:
        raise CredentialRefused(MISSING)
    # IMMEDIATE: a verification never overlaps a revocation
    with opened(path, require=TABLES, record=True) as conn, immediate(conn):
        at = clock(now)
        row = conn.execute(
            "SELECT credential.holder, credential.scope, credential.expires_at,"
            "       revocation.revoked_at"
            " FROM credentials AS credential"
            " LEFT JOIN revocations AS revocation USING (token)"
            " WHERE credential.token = :token",
            {"token": token},
        ).fetchone()
    reason = (UNKNOWN if row is None
              else REVOKED if row["revoked_at"] is not None
              else EXPIRED if row["expires_at"] <= at
              else WRONG_SCOPE if scope not in row["scope"].split()
              else None)
    if reason is not None:
        raise CredentialRefused(reason)
    return {"holder": row["holder"], "scope": row["scope"],
            "expires_at": row["expires_at"], "verified_at": at}


def snapshot(path: str | Path) -> dict[str, list[dict]]:
    """Every credential and revocation, for evidence; a read (chapter 09)."""
    with opened(path, require=TABLES, record=True) as conn:
        return {table: table_rows(conn, table)
                for table in ("credentials", "revocations")}


# --- the service side ----------------------------------------------------------


def guard(conn: sqlite3.Connection, broker: str | Path | None) -> None:
    """In a service's ``install``: its refusals table and, with ``broker``,
    the broker's path that every write will be checked against (chapter 09)."""
    if broker is not None:
        try:  # looked at, never created: a typo must not become a broker
            connect(broker, require=TABLES, record=True).close()
        except StoreMissing as missing:
            raise ValueError(f"no broker installed at {broker}: {missing}") from None
    ensure_schema(conn, GUARD_SCHEMA)
    if broker is not None:
        with immediate(conn):
            conn.execute(
                "INSERT INTO guard (id, broker) VALUES (1, :broker)"
                " ON CONFLICT (id) DO UPDATE SET broker = :broker",
                {"broker": os.path.abspath(broker)},
            )


def admit(conn: sqlite3.Connection, credential: str | None, scope: str) -> float:
    """Inside a service's write transaction: the instant the write is admitted,
    or ``CredentialRefused``. Unguarded (or older) files admit every write
    (chapter 09)."""
    guarded = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'guard'"
    ).fetchone() and conn.execute("SELECT broker FROM guard").fetchone()
    if not guarded:
        return clock(None)
    return verify(guarded["broker"], credential, scope)["verified_at"]


def note_refusal(path: str | Path, action: str, credential: str | None,
                 reason: str) -> None:
    """Log a refused call in the service's own ``refusals``, in a transaction of
    its own after the refused one rolled back (chapter 09)."""
    with opened(path, require=("refusals",), record=True) as conn, immediate(conn):
        conn.execute(
            "INSERT INTO refusals (action, credential, reason, at)"
            " VALUES (:action, :credential, :reason, :at)",
            {"action": action, "credential": credential, "reason": reason,
             "at": clock(None)},
        )


def refusals(conn: sqlite3.Connection) -> list[dict]:
    """A service's refusals, oldest first; none in an older file (chapter 09)."""
    made = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                        " AND name = 'refusals'").fetchone()
    return table_rows(conn, "refusals", "seq") if made else []
