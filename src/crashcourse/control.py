"""Stopping: the switches a run and its scheduler read (chapter 09).

Both switches live in the runtime's own store, an open connection the caller
passes in (like ``claims`` and ``journal``):

* The in-band PAUSE FLAG (``set_paused``, ``is_paused``), introduced in
  chapter 05 and at home here since chapter 09. While it is set,
  ``claims.claim`` grants nothing, every fenced write is refused but the
  record of what already happened (``fence.fenced(..., record=True)``: an
  outcome, a probe's answer, a lease given back, chapter 07), no journal intent is
  written and no request admitted, and the journal worker ends its run at
  the next step boundary with nothing in doubt. It stops only a worker that
  reads it.
* The SCHEDULER SWITCH (``stop_scheduler``, ``start_scheduler``,
  ``scheduler_may_run``): one row per decision, who and why. The newest row
  rules, and with no row at all the answer is "stopped": a scheduler started
  on a fresh or forgotten file starts nothing until a person says so.
  ``start_run`` reads the switch inside the same write transaction as the
  ``runs`` row it adds, so no run slips in after a stop has committed.

The stop that works whatever the worker does is out of band, at the
credential broker (``crashcourse.services.broker``); the person's decisions
on an interrupted task are in ``crashcourse.journal.decisions``. On a PostgreSQL
store (chapter 10) the same rows, numbered by the database (the dialect's
``identity_key``).
"""

from __future__ import annotations

import sqlite3

from crashcourse import store
from crashcourse.store import (
    check_backend,
    dialect,
    ensure_schema,
    immediate,
    sql_list,
    table_exists,
    table_rows,
)
from crashcourse.store.dialect import POSTGRES, SQLITE
from crashcourse.validate import check_text, clock

# The databases install() accepts (store.check_backend): a store on any other
# is refused before anything is written.
RUNS_ON = (SQLITE, POSTGRES)

RUNNING, STOPPED = "running", "stopped"
SWITCH_STATES = (RUNNING, STOPPED)
# {identity_key}: a key the database numbers (crashcourse.store.dialect)
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runtime_control (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    paused     INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    epoch      TEXT NOT NULL,
    changed_at DOUBLE PRECISION    -- when the pause flag was last set or cleared
);
INSERT INTO runtime_control (id, paused, epoch) VALUES (1, 0, 'epoch-1')
    ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS scheduler_switch (
    seq    {{identity_key}},
    state  TEXT NOT NULL CHECK (state IN {sql_list(SWITCH_STATES)}),
    who    TEXT NOT NULL,
    reason TEXT NOT NULL,
    at     DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id     {{identity_key}},
    scheduler  TEXT NOT NULL,       -- the scheduler process that started it
    allowed_by INTEGER NOT NULL REFERENCES scheduler_switch (seq),
    started_at DOUBLE PRECISION NOT NULL
)
"""
TABLES = {"runtime_control": "id", "scheduler_switch": "seq", "runs": "run_id"}


def install(conn: sqlite3.Connection) -> None:
    """Create the pause flag's row, the scheduler switch and the runs (chapter 09)."""
    check_backend(conn, RUNS_ON, __name__)
    ensure_schema(conn, SCHEMA.format(identity_key=dialect(conn).identity_key))


def runtime(conn: sqlite3.Connection) -> sqlite3.Row:
    """The pause flag and the authority epoch, as one row.

    Read it inside the caller's own write transaction (``claims.claim``,
    ``fence.assert_current``), so a pause committed before that transaction
    began is always seen. Introduced in chapter 05, here since chapter 09."""
    return conn.execute("SELECT * FROM runtime_control WHERE id = 1").fetchone()


def set_paused(conn: sqlite3.Connection, paused: bool) -> None:
    """The in-band pause flag: no claim, no fenced write, no new journal step
    while set (chapter 05; in ``control`` since chapter 09)."""
    if not isinstance(paused, bool):
        raise TypeError(f"paused must be True or False, got {paused!r}")
    install(conn)
    with immediate(conn):
        conn.execute(
            "UPDATE runtime_control SET paused = :paused, changed_at = :at",
            {"paused": int(paused), "at": store.now(conn)},
        )


def is_paused(conn: sqlite3.Connection) -> bool:
    """Whether the pause flag is set; a read: no table yet means not paused.

    The journal worker asks it before every step (chapter 09)."""
    if not table_exists(conn, "runtime_control"):
        return False
    row = runtime(conn)
    return bool(row is not None and row["paused"])


def _switch(conn: sqlite3.Connection, state: str, who: str, reason: str,
            now: float | None) -> int:
    check_text("who", who)
    check_text("reason", reason, empty_ok=state == RUNNING)
    clock(now)  # a bad instant is refused before anything is written
    install(conn)
    with immediate(conn):  # stamped under the lock: ordered with start_run's
        return conn.execute(
            "INSERT INTO scheduler_switch (state, who, reason, at)"
            " VALUES (:state, :who, :reason, :at) RETURNING seq",
            {"state": state, "who": who, "reason": reason,
             "at": store.now(conn, now)},
        ).fetchone()[0]


def stop_scheduler(conn: sqlite3.Connection, who: str, reason: str,
                   now: float | None = None) -> int:
    """Stop the scheduler: ``who`` and why, kept as a row; its seq (chapter 09).

    A blank ``who`` or ``reason`` is refused before anything is written."""
    return _switch(conn, STOPPED, who, reason, now)


def start_scheduler(conn: sqlite3.Connection, who: str, reason: str = "",
                    now: float | None = None) -> int:
    """Let the scheduler start runs again; the row's seq (chapter 09)."""
    return _switch(conn, RUNNING, who, reason, now)


def _latest_switch(conn: sqlite3.Connection):
    return conn.execute(
        "SELECT seq, state FROM scheduler_switch ORDER BY seq DESC LIMIT 1"
    ).fetchone()


def scheduler_may_run(conn: sqlite3.Connection) -> bool:
    """Whether the newest switch row says running (chapter 09).

    No row, or no table: nobody has looked, and the answer is no. A read."""
    if not table_exists(conn, "scheduler_switch"):
        return False
    latest = _latest_switch(conn)
    return latest is not None and latest["state"] == RUNNING


def start_run(conn: sqlite3.Connection, scheduler: str,
              now: float | None = None) -> int | None:
    """Start a run if the switch allows it: the new run's id, or None.

    The switch is read under the same write lock as the insert: a stop that
    committed first is always seen (chapter 09)."""
    check_text("scheduler", scheduler)
    install(conn)
    with immediate(conn):
        latest = _latest_switch(conn)
        if latest is None or latest["state"] != RUNNING:
            return None  # stopped, or nobody has said "run": stay stopped
        return conn.execute(
            "INSERT INTO runs (scheduler, allowed_by, started_at)"
            " VALUES (:scheduler, :allowed_by, :at) RETURNING run_id",
            {"scheduler": scheduler, "allowed_by": latest["seq"],
             "at": store.now(conn, now)},
        ).fetchone()[0]


def snapshot(conn: sqlite3.Connection) -> dict[str, list[dict]]:
    """The switches and the runs, row by row, for evidence; a read (chapter 09)."""
    return {table: table_rows(conn, table, key) if table_exists(conn, table) else []
            for table, key in TABLES.items()}  # key: SQLite's rowid, by name
