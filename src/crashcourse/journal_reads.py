"""What the journal says, read without writing (chapters 07 and 09).

Everything here only reads: no install, no write lock, so an observer never
delays a worker, and a file with no journal table yet reads as an empty
journal. Every count comes from rows and step numbers.
``crashcourse.journal`` writes the rows and offers these reads under its own
name too (``journal.journal_status``, ``journal.entries``, ...).
"""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple

from crashcourse.plan import Plan

RUN, PROBE = "run", "probe"  # how an outcome was established (resolved_by)


def installed(conn: sqlite3.Connection) -> bool:
    """Whether the journal table exists; a read asks, it never creates it.

    Introduced in chapter 07."""
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'journal'"
    ).fetchone() is not None


def confirmed_count(conn: sqlite3.Connection, task: str) -> int:
    """How many steps have an outcome: steps 1..n, in order (chapter 07).

    Read from the task's LAST row alone, one walk down the primary key: only
    that row can lack its outcome. Where a resume starts costs the same for a
    journal of 10 rows and one of 10,000."""
    row = conn.execute(
        "SELECT step - (outcome IS NULL) FROM journal WHERE task = :task"
        " ORDER BY step DESC LIMIT 1",
        {"task": task},
    ).fetchone() if installed(conn) else None
    return 0 if row is None else row[0]


class JournalStatus(
    namedtuple("_StatusFields", "states last_row irreversible_not_started")
):
    """What the journal alone says about a task (chapter 07).

    ``states``: per step, confirmed, in_doubt or not_started; ``last_row``: the
    highest step with a row (0: none); ``irreversible_not_started``: the
    irreversible steps numbered after it, provably never performed.
    """

    __slots__ = ()

    def count(self, state: str) -> int:
        return self.states.count(state)

    def summary(self) -> dict:
        return {state: self.count(state)
                for state in ("confirmed", "in_doubt", "not_started")}


def journal_status(conn: sqlite3.Connection, task: str, plan: Plan) -> JournalStatus:
    """Count confirmed / in doubt / provably not started from rows (chapter 07).

    A step after the last row cannot have begun: its intent would have been
    committed first. So an irreversible step numbered after ``last_row`` is
    proved not performed by comparing two numbers, without asking anyone.
    It only reads: no journal table yet is an empty journal.
    """
    rows = dict(conn.execute(
        "SELECT step, outcome IS NOT NULL FROM journal WHERE task = :task",
        {"task": task},
    ).fetchall()) if installed(conn) else {}
    last = max(rows, default=0)
    if sorted(rows) != list(range(1, last + 1)):
        raise ValueError(f"journal of {task} has gaps: steps {sorted(rows)}")
    states = tuple(
        "not_started" if s.number not in rows
        else "confirmed" if rows[s.number] else "in_doubt"
        for s in plan.steps
    )
    unsent = tuple(s.number for s in plan.steps if s.irreversible and s.number > last)
    return JournalStatus(states, last, unsent)


def entries(conn: sqlite3.Connection, task: str) -> list[dict]:
    """The task's journal rows in step order, JSON decoded (``outcome`` None:
    in doubt). A read, like ``journal_status`` (chapter 09)."""
    rows = conn.execute("SELECT * FROM journal WHERE task = :task ORDER BY step",
                        {"task": task}).fetchall() if installed(conn) else []
    decoded = ("args", "before_state", "outcome")
    return [{**dict(row), **{name: row[name] and json.loads(row[name])
                             for name in decoded}} for row in rows]


def resolutions(conn: sqlite3.Connection, task: str) -> dict[str, int]:
    """How the task's outcomes were established: by running or by a probe.

    Introduced in chapter 07; it only reads, like ``journal_status``."""
    rows = conn.execute(
        "SELECT resolved_by, count(*) FROM journal"
        " WHERE task = :task AND outcome IS NOT NULL GROUP BY resolved_by",
        {"task": task},
    ).fetchall() if installed(conn) else []
    return {RUN: 0, PROBE: 0, **{by: n for by, n in rows}}
