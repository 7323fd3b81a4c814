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
and closes it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from crashcourse.store import ensure_schema, immediate, opened

if TYPE_CHECKING:  # only for hints: workers start faster without pathlib
    from pathlib import Path

KEY_HEADER = "X-Operation-Key"
QUEUED, SENT = "queued", "sent"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS messages (
    message_id    INTEGER PRIMARY KEY AUTOINCREMENT,  -- the provider's own id
    recipient     TEXT NOT NULL,
    subject       TEXT NOT NULL,
    body          TEXT NOT NULL,
    headers       TEXT NOT NULL,                      -- JSON object
    operation_key TEXT,                -- the header, indexed for the search
    status        TEXT NOT NULL DEFAULT '{QUEUED}'
                  CHECK (status IN ('{QUEUED}', '{SENT}'))
);
CREATE INDEX IF NOT EXISTS messages_by_key ON messages (operation_key)
"""


def install(path: str | Path) -> None:
    """Create the provider's tables (chapter 07)."""
    with opened(path) as conn:
        ensure_schema(conn, SCHEMA)


def submit(path: str | Path, recipient: str, subject: str, body: str,
           headers: dict) -> dict:
    """Queue one message; every call is a new message (chapter 07)."""
    if "@" not in str(recipient):
        raise ValueError(f"not an address: {recipient!r}")
    with opened(path) as conn, immediate(conn):
        cursor = conn.execute(
            "INSERT INTO messages (recipient, subject, body, headers, operation_key)"
            " VALUES (:recipient, :subject, :body, :headers, :operation_key)",
            {"recipient": recipient, "subject": subject, "body": body,
             "headers": json.dumps(headers, sort_keys=True),
             "operation_key": headers.get(KEY_HEADER)},
        )
    return {"message_id": cursor.lastrowid, "status": QUEUED}


def tick(path: str | Path) -> int:
    """Deliver everything queued; how many messages were sent (chapter 07)."""
    with opened(path) as conn, immediate(conn):
        return conn.execute(
            f"UPDATE messages SET status = '{SENT}' WHERE status = '{QUEUED}'"
        ).rowcount


def probe_sent(path: str | Path, operation_key: str) -> tuple[bool, dict]:
    """Was a message with this operation key SUBMITTED? (chapter 07)

    Searches the whole provider, queue included, by the header: the question
    a retry needs answered is "was it accepted?", not "was it delivered?".
    """
    with opened(path) as conn:
        row = conn.execute(
            "SELECT message_id, status FROM messages"
            " WHERE operation_key = :operation_key ORDER BY message_id",
            {"operation_key": operation_key},
        ).fetchone()
    return (True, dict(row)) if row else (False, {"message_id": None})


def sent_folder(path: str | Path) -> list[dict]:
    """What the sent folder shows: delivered messages only (chapter 07)."""
    return [m for m in messages(path) if m["status"] == SENT]


def messages(path: str | Path) -> list[dict]:
    """Every message the provider accepted, oldest first (chapter 07)."""
    with opened(path) as conn:
        rows = conn.execute(
            "SELECT message_id, recipient, subject, operation_key, status"
            " FROM messages ORDER BY message_id"
        ).fetchall()
    return [dict(row) for row in rows]


def duplicate_messages(path: str | Path) -> int:
    """Messages beyond the first per operation key, from the rows (chapter 07)."""
    with opened(path) as conn:
        return conn.execute(
            "SELECT coalesce(sum(n - 1), 0) FROM ("
            "  SELECT count(*) AS n FROM messages"
            "  WHERE operation_key IS NOT NULL GROUP BY operation_key)"
        ).fetchone()[0]
