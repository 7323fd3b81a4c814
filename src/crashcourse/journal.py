"""Write the intent first: the two-phase journal (chapter 07).

For every step ``run_step`` commits an INTENT row (with what the probe saw
before: ``before_state``) before it acts, and the OUTCOME after. A resumed run
reads the journal:

* outcome recorded: skip the step;
* intent without outcome (the step in doubt): ask the target system through
  the step's probe. Nothing there: clear the intent and run the step. Found:
  record what the probe saw as the outcome, ``resolved_by = 'probe'``.

Steps run in order and a step's intent is written only after the previous
outcome, so at most ONE row can lack an outcome; the partial unique index
``one_in_doubt`` makes SQLite refuse a second one as well. Everything
``journal_status`` reports is counted from rows and step numbers; it only
reads (no install, no write lock), so an observer never delays a worker.

Chapter 09 adds the in-band stop (``should_stop``), gates checked before their
intent (``check_gate``) and ``entries``, the rows a person deciding reads.
"""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple

from crashcourse.boundary import boundary
from crashcourse.effects import operation_key
from crashcourse.plan import GateFailed, Plan, Step
from crashcourse.store import ensure_schema, immediate

PHASES = ("before_intent", "after_intent", "after_action", "after_outcome")
SKIP, PROBE, RUN = "skip", "probe", "run"  # how run_step settled a step
STOPPED = "stopped_before"  # run_plan's result: the step a stop came before

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS journal (
    task          TEXT NOT NULL,
    step          INTEGER NOT NULL,
    operation_key TEXT NOT NULL UNIQUE,  -- travels with the action (mail header)
    action        TEXT NOT NULL,
    args          TEXT NOT NULL,
    before_state  TEXT NOT NULL,         -- what the probe saw: for an unwind
    outcome       TEXT,                  -- NULL: intent written, outcome not
    resolved_by   TEXT CHECK (resolved_by IN ('{RUN}', '{PROBE}')),
    PRIMARY KEY (task, step)
);
-- at most one step of a task may be in doubt, whatever the code does
CREATE UNIQUE INDEX IF NOT EXISTS one_in_doubt ON journal (task)
    WHERE outcome IS NULL
"""


class Action(namedtuple("_ActionFields", "execute probe restore",
                        defaults=(None,))):
    """How to perform one kind of step and how to ask if it happened (chapter 07).

    ``execute(args, operation_key) -> result``; ``probe(args, operation_key) ->
    (done, observed)``: did the target reach the step's end state, and what it
    shows. For a gate the probe is the check: (passed, observed).
    ``restore(args, before_state, operation_key) -> result`` puts the target
    back as ``before_state`` says, for an unwind (chapter 09); None: the action
    cannot be undone.
    """

    __slots__ = ()


def install(conn: sqlite3.Connection) -> None:
    """Create the journal table in ``conn``'s database (chapter 07)."""
    ensure_schema(conn, SCHEMA)


def _key(task: str, step: Step) -> str:
    """The step's operation key: the same task, step, action and args, same key."""
    return operation_key(task, step.number, step.action, step.args)


def _installed(conn: sqlite3.Connection) -> bool:
    """Whether the journal table exists; a read asks, it never creates it."""
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'journal'"
    ).fetchone() is not None


def _row(conn, task: str, step: int):
    return conn.execute(
        "SELECT outcome FROM journal WHERE task = :task AND step = :step",
        {"task": task, "step": step},
    ).fetchone()


def _resolve_in_doubt(conn, task: str, step: Step, action: Action) -> dict | None:
    """Ask the target about a step in doubt; its observation if it happened."""
    done, observed = action.probe(step.args, _key(task, step))
    where = {"task": task, "step": step.number}
    with immediate(conn):
        if not done:  # provably not there: forget the intent, run the step again
            conn.execute("DELETE FROM journal WHERE task = :task AND step = :step",
                         where)
            return None
        conn.execute(
            f"UPDATE journal SET outcome = :outcome, resolved_by = '{PROBE}'"
            " WHERE task = :task AND step = :step AND outcome IS NULL",
            {**where, "outcome": json.dumps(observed, sort_keys=True)},
        )
    return observed


def run_step(conn: sqlite3.Connection, task: str, step: Step, action: Action) -> str:
    """Run one step through the journal; says how: skip, probe or run (chapter 07)."""
    row = _row(conn, task, step.number)
    if row is not None and row["outcome"] is not None:
        return SKIP
    if row is not None and _resolve_in_doubt(conn, task, step, action) is not None:
        return PROBE
    name, key = f"step-{step.number}", _key(task, step)
    boundary(f"{name}:before_intent")
    _, before = action.probe(step.args, key)
    with immediate(conn):
        conn.execute(
            "INSERT INTO journal (task, step, operation_key, action, args,"
            " before_state) VALUES (:task, :step, :operation_key, :action, :args,"
            " :before)",
            {"task": task, "step": step.number, "operation_key": key,
             "action": step.action, "args": json.dumps(step.args, sort_keys=True),
             "before": json.dumps(before, sort_keys=True)},
        )
    boundary(f"{name}:after_intent")
    result = action.execute(step.args, key)
    boundary(f"{name}:after_action")
    with immediate(conn):
        conn.execute(
            f"UPDATE journal SET outcome = :outcome, resolved_by = '{RUN}'"
            " WHERE task = :task AND step = :step",
            {"task": task, "step": step.number,
             "outcome": json.dumps(result, sort_keys=True)},
        )
    boundary(f"{name}:after_outcome")
    return RUN


def confirmed_count(conn: sqlite3.Connection, task: str) -> int:
    """How many steps have an outcome: steps 1..n, in order (chapter 07)."""
    return conn.execute(
        "SELECT count(*) FROM journal WHERE task = :task AND outcome IS NOT NULL",
        {"task": task},
    ).fetchone()[0]


def check_gate(task: str, step: Step, action: Action) -> dict:
    """Check a verification gate now: what it saw, or ``GateFailed``.

    A gate changes nothing, so it is checked BEFORE its intent: a failing
    gate leaves no row, nothing in doubt (chapter 09)."""
    passed, observed = action.probe(step.args, _key(task, step))
    if not passed:
        raise GateFailed(step.number, observed)
    return observed


def run_plan(conn: sqlite3.Connection, task: str, plan: Plan,
             actions: dict[str, Action], *, should_stop=None) -> dict[str, int]:
    """Every step of ``plan`` in order; how many were skipped, probed, run.

    The confirmed prefix is skipped with one count, so finding where to resume
    costs the same for a plan of 10 steps and one of 10,000 (chapter 07).
    ``should_stop()`` is asked before each remaining step (chapter 09): on True
    the run ends before that step's intent, nothing in doubt, ``STOPPED``: N.
    """
    install(conn)
    missing = {step.action for step in plan.steps} - set(actions)
    if missing:
        raise KeyError(f"no action registered for {sorted(missing)}")
    skipped = confirmed_count(conn, task)
    done = {SKIP: skipped, PROBE: 0, RUN: 0}
    for step in plan.steps[skipped:]:
        if should_stop is not None and should_stop():
            return {**done, STOPPED: step.number}
        if step.gate:
            check_gate(task, step, actions[step.action])
        done[run_step(conn, task, step, actions[step.action])] += 1
    return done


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
    ).fetchall()) if _installed(conn) else {}
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
                        {"task": task}).fetchall() if _installed(conn) else []
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
    ).fetchall() if _installed(conn) else []
    return {RUN: 0, PROBE: 0, **{by: n for by, n in rows}}
