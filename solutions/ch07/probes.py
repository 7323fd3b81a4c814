"""Exercise 07.1, answered: a probe for every action (chapter 07)."""

from __future__ import annotations

import sqlite3

from crashcourse.services import drive

ACTIONS = {
    "rename": "make file F be called X on the drive",
    "send_mail": "submit a message to the provider, key in X-Operation-Key",
    "phone_supplier": "read the order aloud to the supplier's answering machine",
}


def probe_rename(drive_conn: sqlite3.Connection, args: dict, key: str):
    """Is file ``args["file_id"]`` called ``args["name"]``? Look it up BY ID."""
    observed = drive.lookup(drive_conn, args["file_id"])
    return observed["name"] == args["name"], observed


def probe_mail(mail_conn: sqlite3.Connection, args: dict, key: str):
    """Did the provider accept a message whose X-Operation-Key is ``key``?"""
    row = mail_conn.execute(
        "SELECT message_id, status FROM messages WHERE op_key = :key"
        " ORDER BY message_id",
        {"key": key},
    ).fetchone()
    return (True, dict(row)) if row else (False, {"message_id": None})


def unverifiable_action() -> str:
    """The answering machine keeps no record we can query: redesign that step."""
    return "phone_supplier"
