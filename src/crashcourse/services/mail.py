"""The mail provider: a queue now, delivery later (chapter 07).

``submit`` accepts a message into the provider's queue and returns at once;
a later ``tick`` marks queued messages sent. Queued is not sent: a message can
sit in the queue while the sent folder (``sent_folder``) is still empty.

Sending is a DELTA: every accepted submission is one more message, and the
provider has no idempotency key. What makes a safe retry possible is a header
the caller stamps on each message, ``X-Operation-Key``: ``probe_sent`` asks the
provider for SUBMITTED messages carrying that header, queued or delivered.

Like every service, the provider is called by its address, the path of its
file: each call opens it, does its work (writes in one ``BEGIN IMMEDIATE``)
and closes it. Only ``install`` creates the file; every other call refuses a
file that is missing, empty or not installed (``store.StoreMissing``), so a
lost provider never answers "no such message" (issue 14).

Installed with ``broker=PATH`` (chapter 09), the provider is GUARDED: a
submission must present a credential for ``mail:submit`` that the broker
accepts inside the submission's own transaction, under the broker's lock
(``broker.guarded_write``), or nothing is queued and the refusal is logged in
``refusals``. Delivery needs no credential: a message accepted before a
revocation is still delivered, because a stop stops future actions, not the
ones already accepted. Each message keeps when the broker judged its
credential (``verified_at``), when it was accepted (``accepted_at``, stamped
just before the commit) and, once delivered, when it was sent.

The provider takes no idempotency key and no fencing token: a submission that
leaves a paused process late is one more message, whatever any journal says.
The key header makes such a duplicate visible (``duplicate_messages``), never
impossible (chapters 07-08).
"""

from __future__ import annotations

import json

from crashcourse.services.broker import (
    CredentialRefused,
    guard,
    guarded_write,
    note_refusal,
    refusals,
)
from crashcourse.store import (
    DEFAULT_BUSY_TIMEOUT_MS,
    ensure_schema,
    immediate,
    opened,
    table_rows,
)
from crashcourse.validate import clock

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:  # only for hints: workers start faster without pathlib
    from pathlib import Path

KEY_HEADER = "X-Operation-Key"
QUEUED, SENT = "queued", "sent"
SUBMIT = "mail:submit"  # the scope a guarded provider asks of a credential
TABLES = ("messages",)  # an installed provider has these (opened's require)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS messages (
    message_id    INTEGER PRIMARY KEY AUTOINCREMENT,  -- the provider's own id
    recipient     TEXT NOT NULL,
    subject       TEXT NOT NULL,
    body          TEXT NOT NULL,
    headers       TEXT NOT NULL,                      -- JSON object
    operation_key TEXT,                -- the header, indexed for the search
    status        TEXT NOT NULL DEFAULT '{QUEUED}'
                  CHECK (status IN ('{QUEUED}', '{SENT}')),
    credential    TEXT,                -- what the submission presented
    verified_at   REAL,                -- when the broker judged it (chapter 09)
    accepted_at   REAL NOT NULL,       -- stamped just before its commit
    sent_at       REAL                 -- when delivered (chapter 09)
);
CREATE INDEX IF NOT EXISTS messages_by_key ON messages (operation_key)
"""


def install(path: str | Path, *, broker: str | Path | None = None) -> None:
    """Create the provider's tables (chapter 07); with ``broker`` every later
    submission needs its credential (chapter 09)."""
    with opened(path, record=True) as conn:
        ensure_schema(conn, SCHEMA)
        guard(conn, broker)


def submit(path: str | Path, recipient: str, subject: str, body: str,
           headers: dict, *, credential: str | None = None,
           busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> dict:
    """Queue one message; every call is a new message (chapter 07).

    A guarded provider checks ``credential`` first, in the same transaction
    (chapter 09): refused, nothing is queued and ``CredentialRefused`` says why.
    ``busy_timeout_ms`` bounds the wait for the provider's lock, so a caller
    that declared how long its request may take can keep to it (chapter 08).
    """
    if "@" not in str(recipient):
        raise ValueError(f"not an address: {recipient!r}")
    try:
        with guarded_write(path, TABLES, credential, SUBMIT,
                           busy_timeout_ms=busy_timeout_ms) as (conn, admit):
            verified_at = admit()
            cursor = conn.execute(
                "INSERT INTO messages (recipient, subject, body, headers,"
                " operation_key, credential, verified_at, accepted_at)"
                " VALUES (:recipient, :subject, :body, :headers, :operation_key,"
                " :credential, :verified_at, :accepted_at)",
                {"recipient": recipient, "subject": subject, "body": body,
                 "headers": json.dumps(headers, sort_keys=True),
                 "operation_key": headers.get(KEY_HEADER),
                 "credential": credential, "verified_at": verified_at,
                 "accepted_at": clock(None)},  # last: the commit follows
            )
    except CredentialRefused as refused:
        note_refusal(path, "submit", credential, refused.reason)
        raise
    return {"message_id": cursor.lastrowid, "status": QUEUED}


def tick(path: str | Path) -> int:
    """Deliver everything queued; how many messages were sent (chapter 07)."""
    with opened(path, require=TABLES, record=True) as conn, immediate(conn):
        return conn.execute(
            f"UPDATE messages SET status = '{SENT}', sent_at = :at"
            f" WHERE status = '{QUEUED}'",
            {"at": clock(None)},
        ).rowcount


def probe_sent(path: str | Path, operation_key: str) -> tuple[bool, dict]:
    """Was a message with this operation key SUBMITTED? (chapter 07)

    Searches the whole provider, queue included, by the header: the question
    a retry needs answered is "was it accepted?", not "was it delivered?".
    """
    with opened(path, require=TABLES, record=True) as conn:
        row = conn.execute(
            "SELECT message_id, status FROM messages"
            " WHERE operation_key = :operation_key ORDER BY message_id",
            {"operation_key": operation_key},
        ).fetchone()
    return (True, dict(row)) if row else (False, {"message_id": None})


def copies(path: str | Path, operation_key: str) -> int:
    """How many accepted messages carry this operation key (chapters 07-08).

    More than one is a duplicate the provider took (a late request from a
    paused process): the key header makes it visible, nothing unsends it."""
    with opened(path, require=TABLES, record=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM messages WHERE operation_key = :operation_key",
            {"operation_key": operation_key}).fetchone()[0]


def sent_folder(path: str | Path) -> list[dict]:
    """What the sent folder shows: delivered messages only (chapter 07)."""
    return [m for m in messages(path) if m["status"] == SENT]


def messages(path: str | Path) -> list[dict]:
    """Every message the provider accepted, oldest first (chapter 07)."""
    with opened(path, require=TABLES, record=True) as conn:
        rows = conn.execute(
            "SELECT message_id, recipient, subject, operation_key, status"
            " FROM messages ORDER BY message_id"
        ).fetchall()
    return [dict(row) for row in rows]


def duplicate_messages(path: str | Path) -> int:
    """Messages beyond the first per operation key, from the rows (chapter 07)."""
    with opened(path, require=TABLES, record=True) as conn:
        return conn.execute(
            "SELECT coalesce(sum(n - 1), 0) FROM ("
            "  SELECT count(*) AS n FROM messages"
            "  WHERE operation_key IS NOT NULL GROUP BY operation_key)"
        ).fetchone()[0]


def snapshot(path: str | Path) -> dict[str, list[dict]]:
    """Every message, with its instants and credential, and every refusal
    (chapter 09)."""
    with opened(path, require=TABLES, record=True) as conn:
        return {"messages": table_rows(conn, "messages", "message_id"),
                "refusals": refusals(conn)}
