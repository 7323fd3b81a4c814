"""Exercise 09.1: a scheduler that stays stopped (chapter 09).

The shop runs two scheduled jobs from one runtime store: ``supplier-sync``
every night and ``restock`` every hour. Each job has its own switch, kept in
``job_switch``: one row per decision a person takes (who, why, when). The
scheduler asks ``may_run`` and starts work only through ``start_run``.
``control`` has a switch like this for a single scheduler; write this one
yourself, over these two tables.
"""

from __future__ import annotations

import sqlite3

from crashcourse.store import ensure_schema, immediate, sql_list  # noqa: F401
from crashcourse.validate import check_text, clock  # noqa: F401  (the door checks)

RUNNING, STOPPED = "running", "stopped"
STATES = (RUNNING, STOPPED)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS job_switch (
    seq    INTEGER PRIMARY KEY AUTOINCREMENT,  -- the order decisions were written
    job    TEXT NOT NULL,
    state  TEXT NOT NULL CHECK (state IN {sql_list(STATES)}),
    who    TEXT NOT NULL,
    reason TEXT NOT NULL,
    at     REAL NOT NULL                       -- the writer's clock: it can step back
);
CREATE TABLE IF NOT EXISTS job_runs (
    run_id     INTEGER PRIMARY KEY AUTOINCREMENT,
    job        TEXT NOT NULL,
    scheduler  TEXT NOT NULL,
    allowed_by INTEGER NOT NULL REFERENCES job_switch (seq),
    started_at REAL NOT NULL
)
"""


def install(conn: sqlite3.Connection) -> None:
    """Given: create ``job_switch`` and ``job_runs``."""
    ensure_schema(conn, SCHEMA)


def set_switch(conn: sqlite3.Connection, job: str, state: str, who: str,
               reason: str = "", now: float | None = None) -> int:
    """Record a person's decision for ``job``; return the new row's ``seq``.

    ``state`` is RUNNING or STOPPED; ``at`` is ``clock(now)``. Refused with
    ``ValueError`` and NOTHING written: another state, a blank ``job`` or
    ``who``, a stop without a reason (a start may have none), a bad ``now``.
    """
    raise NotImplementedError("exercise 09.1: record who decided what, and why")


def may_run(conn: sqlite3.Connection, job: str) -> bool:
    """Whether ``job`` may start a run now.

    The job's NEWEST decision rules: the last one written, whatever the
    ``at`` stamps say. Another job's decisions say nothing about this one.
    No decision at all means nobody has said "run": the answer is no. A read:
    on a fresh file it creates nothing.
    """
    raise NotImplementedError("exercise 09.1: stopped unless told otherwise")


def start_run(conn: sqlite3.Connection, job: str, scheduler: str,
              now: float | None = None) -> int | None:
    """Start one run of ``job`` if its switch allows it: the ``job_runs`` row's
    ``run_id``, or None (and no row).

    The row names the decision that allowed it (``allowed_by``: that switch
    row's ``seq``). A stop committed before this call must always be seen,
    also one committed by another connection a moment before the insert.
    """
    raise NotImplementedError("exercise 09.1: read the switch where you write")
