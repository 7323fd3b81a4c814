"""Exercise 01.1: the payload-checked apply (chapter 01).

Write ``apply_checked`` on the ledger table below. It is what
``crashcourse.effects.apply_once`` does; write it yourself without importing
that function. ``crashcourse.store.immediate`` and the shared checks in
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
    result  TEXT NOT NULL    -- JSON of what mutate returned that time
)
"""


def install(conn: sqlite3.Connection) -> None:
    """Create the ``requests`` table (given)."""
    ensure_schema(conn, SCHEMA)


def apply_checked(
    conn: sqlite3.Connection,
    key: str,
    payload: Any,
    mutate: Callable[[sqlite3.Connection], Any],
) -> tuple[str, Any]:
    """Run ``mutate(conn)`` at most once per ``key``.

    * First use of ``key``: run ``mutate`` and record ``key``, ``payload`` and
      its result in ``requests``, all in ONE transaction; return
      ``("applied", result)``. If ``mutate`` raises, nothing stays written.
    * Same ``key`` and an equal payload (equal as JSON: key order in a dict does
      not matter): do not run ``mutate``; return
      ``("already_applied", recorded_result)``.
    * Same ``key``, another payload: raise ``EffectConflict(key, recorded,
      offered)``; nothing is written and ``mutate`` does not run.
    * A key that is not a non-empty, non-blank string: ``ValueError``, before
      anything is written.
    """
    raise NotImplementedError("exercise 01.1: write apply_checked")
