"""The mail provider: a queue now, delivery later (chapter 07).

``submit`` accepts a message into the provider's queue and returns at once;
a later ``tick`` marks queued messages sent. Queued is not sent: a message can
sit in the queue while the sent folder (``sent_folder``) is still empty.

Sending is a DELTA: every accepted submission is one more message, and the
provider has no idempotency key. What makes a safe retry possible is a header
the caller stamps on each message, ``X-Operation-Key``: ``probe_sent`` asks the
provider for SUBMITTED messages carrying that header, queued or delivered.
"""

from __future__ import annotations

import json

from crashcourse.store import ensure_schema, immediate

KEY_HEADER = "X-Operation-Key"

SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    message_id INTEGER PRIMARY KEY AUTOINCREMENT,  -- the provider's own id
    recipient  TEXT NOT NULL,
    subject    TEXT NOT NULL,
    body       TEXT NOT NULL,
    headers    TEXT NOT NULL,                      -- JSON object
    op_key     TEXT,                  -- the header, indexed for the search
    status     TEXT NOT NULL DEFAULT 'queued'
               CHECK (status IN ('queued', 'sent'))
);
CREATE INDEX IF NOT EXISTS messages_by_key ON messages (op_key)
"""


def initialize(conn) -> None:
    """Create the provider's tables (chapter 07)."""
    ensure_schema(conn, SCHEMA)


def submit(conn, recipient: str, subject: str, body: str, headers: dict) -> dict:
    """Queue one message; every call is a new message (chapter 07)."""
    if "@" not in str(recipient):
        raise ValueError(f"not an address: {recipient!r}")
    with immediate(conn):
        cursor = conn.execute(
            "INSERT INTO messages (recipient, subject, body, headers, op_key)"
            " VALUES (:recipient, :subject, :body, :headers, :op_key)",
            {"recipient": recipient, "subject": subject, "body": body,
             "headers": json.dumps(headers, sort_keys=True),
             "op_key": headers.get(KEY_HEADER)},
        )
    return {"message_id": cursor.lastrowid, "status": "queued"}


def tick(conn) -> int:
    """Deliver everything queued; returns how many messages were sent."""
    with immediate(conn):
        return conn.execute(
            "UPDATE messages SET status = 'sent' WHERE status = 'queued'"
        ).rowcount


def probe_sent(conn, key: str) -> tuple[bool, dict]:
    """Was a message with this operation key SUBMITTED? (chapter 07)

    Searches the whole provider, queue included, by the header: the question
    a retry needs answered is "was it accepted?", not "was it delivered?".
    """
    row = conn.execute(
        "SELECT message_id, status FROM messages WHERE op_key = :key"
        " ORDER BY message_id",
        {"key": key},
    ).fetchone()
    return (True, dict(row)) if row else (False, {"message_id": None})


def sent_folder(conn) -> list[dict]:
    """What the sent folder shows: delivered messages only (chapter 07)."""
    return [m for m in messages(conn) if m["status"] == "sent"]


def messages(conn) -> list[dict]:
    """Every message the provider accepted, oldest first."""
    rows = conn.execute(
        "SELECT message_id, recipient, subject, op_key, status FROM messages"
        " ORDER BY message_id"
    ).fetchall()
    return [dict(row) for row in rows]


def duplicate_messages(conn) -> int:
    """Messages beyond the first per operation key, from the provider's rows."""
    return conn.execute(
        "SELECT coalesce(sum(n - 1), 0) FROM ("
        "  SELECT count(*) AS n FROM messages"
        "  WHERE op_key IS NOT NULL GROUP BY op_key)"
    ).fetchone()[0]
