"""The credential broker: short-lived credentials a person can revoke (chapter 09).

The out-of-band stop. The broker keeps its own SQLite file and is called by
its path, like every service. It ISSUES a credential to a holder for a scope
(space-separated words such as ``"drive:rename mail:submit"``) and a short
lifetime on the wall clock; a person REVOKES it; a guarded service checks it
inside the very transaction that writes the effect.

What a revocation bounds is COMMITS, not only admissions. A guarded write
(``guarded_write``) attaches the broker's file to the service's connection
before it begins, so its ``BEGIN IMMEDIATE`` holds the write lock of BOTH
files: the service's and the broker's. It reads the credential under that
lock, writes the effect, stamps the effect with the instant just before its
commit, and commits; SQLite commits the service's file before it lets go of
the broker's lock. ``revoke`` needs that lock too, so it can only stamp
``revoked_at`` after every write that was admitted has committed (or rolled
back), and every write that begins later reads the revocation and is
refused. After ``revoke`` returns, nothing commits under that credential,
whatever its holder does: nobody asks the worker. "Effects committed after
the revocation" is then a comparison of two columns, the effect's commit
stamp and ``revoked_at``, and it can fail: a check made in a transaction of
its own (``verify``, then the write) lets a write verified before the
revocation commit after it.

The price is the lock: a guarded write whose process is paused inside its
transaction (SIGSTOP, a debugger) holds the broker, and ``revoke`` waits for
it, bounded (``RevocationBlocked``: nothing was revoked; kill that process,
which rolls its write back, or try again). It never returns with such a
write still able to commit.

A revoked holder gets no new credential until a person grants one again
(``grant``): ``issue`` refuses a holder whose latest revocation is newer than
its latest grant, so revoking one token is not undone by asking for another.
``revoke_holder`` revokes every live credential of a holder at once (the
person's hand-over, chapter 09, uses it).

The service side: ``guard`` (called by the service's ``install``) keeps the
broker's path in the service's own file; ``guarded_write`` opens the
service's file for one write; ``note_refusal`` logs a refusal in the
service's own ``refusals`` table after the rollback. A service installed
without a broker ignores credentials, as in chapters 00-08.

Only ``install`` creates the broker's tables: every other call, a guarded
service's check included, refuses a broker file that is missing, empty,
damaged or not installed (``store.StoreMissing``), so a lost broker never
accepts or refuses a credential from an empty file (issue 14).
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
from contextlib import contextmanager

from crashcourse.boundary import boundary
from crashcourse.store import (
    DEFAULT_BUSY_TIMEOUT_MS,
    StoreMissing,
    connect,
    ensure_schema,
    immediate,
    lock_waited_out,
    opened,
    refuse_damaged,
    table_exists,
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
REVOKE_WAIT_MS = 5000  # how long ``revoke`` waits for an admitted write to end

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
);
CREATE TABLE IF NOT EXISTS grants (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    holder     TEXT NOT NULL,        -- may be issued credentials again
    who        TEXT NOT NULL,        -- the person who decided so
    granted_at REAL NOT NULL
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


class HolderStopped(PermissionError):
    """``issue`` for a holder revoked since a person last granted it (ch. 09)."""


class RevocationBlocked(TimeoutError):
    """``revoke`` waited its bound for a guarded write that was admitted and
    has neither committed nor rolled back (its process may be paused). Nothing
    was revoked: kill that process (its write rolls back) or try again."""


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
        if stopped_since_grant(conn, holder):
            raise HolderStopped(f"{holder!r} was revoked; a person must grant it "
                                "again before it gets a credential")
        conn.execute(
            "INSERT INTO credentials (token, holder, scope, issued_at, expires_at)"
            " VALUES (:token, :holder, :scope, :at, :expires_at)",
            {"token": token, "holder": holder, "scope": scope, "at": at,
             "expires_at": at + ttl},
        )
    return token


def stopped_since_grant(conn: sqlite3.Connection, holder: str,
                        schema: str = "main") -> bool:
    """Whether ``holder`` has a revocation newer than its latest grant."""
    return conn.execute(
        f"SELECT coalesce(max(revocation.revoked_at), 0)"
        f"       > coalesce((SELECT max(granted_at) FROM {schema}.grants"
        f"                   WHERE holder = :holder), 0)"
        f" FROM {schema}.revocations AS revocation"
        f" JOIN {schema}.credentials AS credential USING (token)"
        f" WHERE credential.holder = :holder", {"holder": holder}).fetchone()[0] == 1


@contextmanager
def _revoking(path: str | Path, wait_ms: int):
    """The broker's write lock for a revocation, waited for at most ``wait_ms``."""
    try:
        with opened(path, require=TABLES, record=True,
                    busy_timeout_ms=wait_ms) as conn, immediate(conn):
            yield conn
    except sqlite3.OperationalError as busy:
        if not lock_waited_out(busy):
            raise
        raise RevocationBlocked(
            f"a guarded write admitted before this revocation has not ended "
            f"within {wait_ms} ms (is its process paused?); nothing was revoked: "
            "kill that process or try again") from None


def _revoke_locked(conn: sqlite3.Connection, token: str, who: str, at: float) -> None:
    conn.execute("INSERT INTO revocations (token, who, revoked_at)"
                 " VALUES (:token, :who, :at)", {"token": token, "who": who, "at": at})


def revoke(path: str | Path, token: str, who: str, now: float | None = None, *,
           wait_ms: int = REVOKE_WAIT_MS) -> float:
    """Revoke ``token``: once this returns, no write under it commits. Returns
    ``revoked_at``, stamped under the broker's lock, so after every write that
    was admitted before it. An unknown token (``LookupError``) or one already
    revoked (``ValueError``) is refused and nothing is written; a guarded
    write still open after ``wait_ms``: ``RevocationBlocked`` (chapter 09)."""
    check_text("token", token)
    check_text("who", who)
    with _revoking(path, wait_ms) as conn:
        at = clock(now)
        if conn.execute("SELECT 1 FROM credentials WHERE token = :token",
                        {"token": token}).fetchone() is None:
            raise LookupError(f"no credential {token!r} at this broker")
        done = conn.execute("SELECT who, revoked_at FROM revocations"
                            " WHERE token = :token", {"token": token}).fetchone()
        if done is not None:
            raise ValueError(f"credential {token!r} was already revoked by "
                             f"{done['who']}")
        _revoke_locked(conn, token, who, at)
    return at


def revoke_holder(path: str | Path, holder: str, who: str,
                  now: float | None = None, *, wait_ms: int = REVOKE_WAIT_MS
                  ) -> dict:
    """Revoke every credential of ``holder`` not yet revoked, and stop it from
    being issued another until ``grant``: ``{"revoked": [tokens], "revoked_at"}``
    (chapter 09). Stops the holder even when it holds no credential now."""
    check_text("holder", holder)
    check_text("who", who)
    with _revoking(path, wait_ms) as conn:
        at = clock(now)
        live = [row["token"] for row in conn.execute(
            "SELECT token FROM credentials WHERE holder = :holder"
            " AND token NOT IN (SELECT token FROM revocations) ORDER BY issued_at",
            {"holder": holder})]
        if not live:  # nothing to revoke: a marker credential keeps the stop
            import secrets

            marker = f"cred-stop-{secrets.token_hex(8)}"
            conn.execute("INSERT INTO credentials (token, holder, scope, issued_at,"
                         " expires_at) VALUES (:token, :holder, '', :at, :at)",
                         {"token": marker, "holder": holder, "at": at})
            live = [marker]
        for token in live:
            _revoke_locked(conn, token, who, at)
    return {"revoked": live, "revoked_at": at}


def grant(path: str | Path, holder: str, who: str, now: float | None = None) -> float:
    """A person lets ``holder`` be issued credentials again after a revocation;
    the grant's instant (chapter 09). Revoked tokens stay revoked."""
    check_text("holder", holder)
    check_text("who", who)
    with opened(path, require=TABLES, record=True) as conn, immediate(conn):
        at = clock(now)
        conn.execute("INSERT INTO grants (holder, who, granted_at)"
                     " VALUES (:holder, :who, :at)",
                     {"holder": holder, "who": who, "at": at})
    return at


CREDENTIAL = """
SELECT credential.holder, credential.scope, credential.expires_at,
       revocation.revoked_at
FROM {schema}.credentials AS credential
LEFT JOIN {schema}.revocations AS revocation USING (token)
WHERE credential.token = :token
"""


def judged(conn: sqlite3.Connection, token: str | None, scope: str, at: float,
           schema: str = "main") -> dict:
    """The credential as the broker's file shows it through ``conn`` at instant
    ``at``, or ``CredentialRefused``: missing, unknown, revoked, expired or
    wrong scope (chapter 09)."""
    if not token:
        raise CredentialRefused(MISSING)
    row = conn.execute(CREDENTIAL.format(schema=schema), {"token": token}).fetchone()
    reason = (UNKNOWN if row is None
              else REVOKED if row["revoked_at"] is not None
              else EXPIRED if row["expires_at"] <= at
              else WRONG_SCOPE if scope not in row["scope"].split()
              else None)
    if reason is not None:
        raise CredentialRefused(reason)
    return {"holder": row["holder"], "scope": row["scope"],
            "expires_at": row["expires_at"], "verified_at": at}


def verify(path: str | Path, token: str | None, scope: str,
           now: float | None = None) -> dict:
    """Ask the broker about a credential, in a transaction of its own: the
    holder, scope and the instant it was accepted (``verified_at``), or
    ``CredentialRefused`` (chapter 09). An answer for a person or a test:
    a service must not act on it, since a revocation may land between this
    answer and the service's commit (``guarded_write`` closes that gap)."""
    if not token:
        raise CredentialRefused(MISSING)
    with opened(path, require=TABLES, record=True) as conn, immediate(conn):
        return judged(conn, token, scope, clock(now))


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


def broker_of(conn: sqlite3.Connection) -> str | None:
    """The broker a service's file is guarded by, or None (chapter 09)."""
    made = table_exists(conn, "guard")
    row = made and conn.execute("SELECT broker FROM guard").fetchone()
    return row["broker"] if row else None


def _attach(conn: sqlite3.Connection, broker: str) -> None:
    """Attach the broker's file as ``broker``: never creating it, and refusing
    one that is missing, uninstalled or damaged, before anything is written."""
    if not os.path.isfile(broker) or os.path.getsize(broker) == 0:
        raise StoreMissing(f"{broker}: no broker here (missing or 0 bytes)")
    where = broker
    for char, escaped in (("%", "%25"), ("?", "%3F"), ("#", "%23")):
        where = where.replace(char, escaped)
    conn.execute("ATTACH DATABASE :uri AS broker", {"uri": f"file:{where}?mode=rw"})
    names = {row[0] for row in conn.execute(
        "SELECT name FROM broker.sqlite_master WHERE type = 'table'")}
    if not set(TABLES) <= names:
        raise StoreMissing(f"{broker}: not an installed broker")
    refuse_damaged(conn, broker, record=True, schema="broker")


@contextmanager
def guarded_write(path: str | Path, tables: tuple[str, ...],
                  credential: str | None, scope: str, *,
                  busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS):
    """Open a service's file for ONE write under ``credential``; yields
    ``(conn, admit)`` inside a transaction that holds the service's write lock
    AND, for a guarded service, the broker's (chapter 09).

    ``admit()`` judges the credential under both locks and returns the instant
    (None for an unguarded file, which admits every write), or raises
    ``CredentialRefused``: the block rolls back, nothing written (log it with
    ``note_refusal``). Call it after looking up history (a replay of a
    recorded effect needs no current authority, chapter 03) and before
    writing any new effect; stamp the effect with ``clock()`` as the block's
    last act. The service's file commits before the broker's lock is let go,
    so a ``revoke`` that returns has seen every admitted write end. The
    boundary ``<scope>:admitted`` sits between the judgement and the effect.
    ``busy_timeout_ms`` bounds the wait for the two locks (a caller with a
    declared wait passes one that fits in it)."""
    with opened(path, require=tables, record=True,
                busy_timeout_ms=busy_timeout_ms) as conn:
        broker = broker_of(conn)
        if broker is not None:
            _attach(conn, broker)

        def admit() -> float | None:
            verified_at = None
            if broker is not None:
                verified_at = judged(conn, credential, scope, clock(None),
                                     schema="broker")["verified_at"]
            boundary(f"{scope}:admitted")
            return verified_at

        with immediate(conn):  # BEGIN IMMEDIATE locks every attached file too
            yield conn, admit


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
    made = table_exists(conn, "refusals")
    return table_rows(conn, "refusals", "seq") if made else []
