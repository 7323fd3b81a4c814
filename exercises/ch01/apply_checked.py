"""Exercise 01.1: the payload-checked apply that keeps refusals (chapter 01).

Chapter 01's ``apply_once`` forgets a mutation that raised: its ledger row
rolls back with it, so the next call runs the mutation again. Here a mutation
may also REFUSE, by raising ``Refused`` (the board refuses a note for an item
the shop does not stock, say). A refusal is an answer, and the key keeps it:
a replay hears the same refusal without running anything, even if the
mutation would succeed by now. Any other exception is a failure, not an
answer, and leaves nothing behind.

Write ``apply_checked`` on the ``requests`` table below, without
``crashcourse.effects.apply_once`` (it keeps no refusals).
``crashcourse.store.immediate`` and the shared checks in
``crashcourse.validate`` (``canonical``, ``check_text``) are fine to use.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from crashcourse.effects import EffectConflict  # noqa: F401  (raise this one)
from crashcourse.store import ensure_schema

SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    key     TEXT PRIMARY KEY,
    payload TEXT NOT NULL,   -- JSON of what the key was first used for
    result  TEXT,            -- JSON of what mutate returned, NULL if it refused
    refusal TEXT             -- why mutate refused, NULL if it applied
)
"""


class Refused(Exception):
    """What a mutation raises to refuse; ``reason`` says why (given)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def install(conn: sqlite3.Connection) -> None:
    """Create the ``requests`` table (given)."""
    ensure_schema(conn, SCHEMA)


def apply_checked(
    conn: sqlite3.Connection,
    key: str,
    payload: Any,
    mutate: Callable[[sqlite3.Connection], Any],
) -> tuple[str, Any]:
    """Commit ``mutate(conn)``'s writes at most once per ``key``; keep its answer.

    * First use of ``key``: run ``mutate`` in ONE transaction with the
      ``requests`` row for ``key`` and ``payload``.

      - It returns: record the result; return ``("applied", result)``.
      - It raises ``Refused``: nothing ``mutate`` wrote may stay, but the
        request row does, with the reason in ``refusal``; then raise
        ``Refused`` with that reason.
      - It raises anything else: nothing stays written, no request row
        either; let the exception propagate (the next call runs ``mutate``).

    * Same ``key`` and an equal payload (equal as JSON: key order in a dict does
      not matter): do not run ``mutate``. Return ``("already_applied",
      recorded_result)``, or raise ``Refused`` with the recorded reason.
    * Same ``key``, another payload: raise ``EffectConflict(key, recorded,
      offered)``, both payloads as values (the recorded one decoded, not the
      stored JSON text); nothing is written and ``mutate`` does not run.
    * A key that is not a non-empty, non-blank string: ``ValueError``, before
      anything is written.

    Undoing what ``mutate`` wrote while keeping the request row is the new
    part: SQLite's ``SAVEPOINT name`` / ``ROLLBACK TO name`` / ``RELEASE name``
    undo part of a transaction; a second transaction would do it too.
    """
    raise NotImplementedError("exercise 01.1: write apply_checked")
