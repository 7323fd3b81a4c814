"""Exercise 09.1, answered: a scheduler that stays stopped (chapter 09).

The shop runs two scheduled jobs from one runtime store: ``supplier-sync``
every night and ``restock`` every hour. Each job has its own switch, kept in
``job_switch``: one row per decision a person takes (who, why, when). The
scheduler asks ``may_run`` and starts work only through ``start_run``.
"""

from __future__ import annotations

import sqlite3

from crashcourse.store import ensure_schema, immediate, sql_list
from crashcourse.validate import check_text, clock

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
    """Record a person's decision for ``job``; the new row's ``seq``."""
    check_text("job", job)
    if state not in STATES:
        raise ValueError(f"state must be one of {STATES}, got {state!r}")
    check_text("who", who)
    check_text("reason", reason, empty_ok=state == RUNNING)  # a stop says why
    clock(now)  # a bad instant is refused before anything is written
    install(conn)
    with immediate(conn):
        return conn.execute(
            "INSERT INTO job_switch (job, state, who, reason, at)"
            " VALUES (:job, :state, :who, :reason, :at)",
            {"job": job, "state": state, "who": who, "reason": reason,
             "at": stamp(now)},
        ).lastrowid


def stamp(now: float | None) -> float:
    """The instant a decision is recorded at: the one given, else the clock's."""
    return clock(now)


def _newest(conn: sqlite3.Connection, job: str):
    """The job's last decision written (by seq, never by clock), or None."""
    return conn.execute(
        "SELECT seq, state FROM job_switch"
        " WHERE job = :job"
        " ORDER BY seq DESC LIMIT 1",
        {"job": job},
    ).fetchone()


def may_run(conn: sqlite3.Connection, job: str) -> bool:
    """Whether the job's newest decision says running. A read: no table or no
    row means nobody has said "run", and the answer is no."""
    check_text("job", job)
    made = conn.execute("SELECT 1 FROM sqlite_master"
                        " WHERE type = 'table' AND name = 'job_switch'").fetchone()
    return allows(_newest(conn, job) if made else None)


def allows(newest) -> bool:
    """A decision that says running; none at all says nothing: stay stopped."""
    return newest is not None and newest["state"] == RUNNING


def start_run(conn: sqlite3.Connection, job: str, scheduler: str,
              now: float | None = None) -> int | None:
    """Start one run of ``job`` if its switch allows it: the run's id, or None.

    The switch is read under the same write lock as the run's insert, so a
    stop that committed first is always seen."""
    check_text("job", job)
    check_text("scheduler", scheduler)
    clock(now)
    install(conn)
    with immediate(conn):
        newest = _newest(conn, job)
        if not allows(newest):
            return None  # stopped, or nobody has looked: stay stopped
        return record_run(conn, job, scheduler, newest, now)


def record_run(conn: sqlite3.Connection, job: str, scheduler: str,
               newest, now: float | None) -> int:
    """The run's row, naming the decision that allowed it; its id."""
    return conn.execute(
        "INSERT INTO job_runs (job, scheduler, allowed_by, started_at)"
        " VALUES (:job, :scheduler, :allowed_by, :at)",
        {"job": job, "scheduler": scheduler, "allowed_by": newest["seq"],
         "at": clock(now)},
    ).lastrowid
