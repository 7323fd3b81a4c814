"""What the journal says, read without writing (chapters 07 and 09).

Everything here only reads: no install, no write lock, so an observer never
delays a worker, and a file with no journal table yet reads as an empty
journal. Every count comes from rows and step numbers.
``crashcourse.journal`` writes the rows and offers these reads under its own
name too (``journal.journal_status``, ``journal.entries``, ...).

The journal's door is here too, for reads and writes alike: ``check_task``,
``check_step`` and ``check_remaining`` refuse what no row could honestly
record (a blank task, a step numbered 0, -1, 1.5 or True, arguments with NaN)
before anything is read, written or run (issue 14, as ``effects.apply_once``
does). So is ``probe_gate``, which asks a gate's target and writes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple

from crashcourse import store
from crashcourse.effects import operation_key
from crashcourse.journal.plan import GateFailed, Plan, Step
from crashcourse.validate import canonical, check_count, check_flag, check_text

RUN, PROBE = "run", "probe"  # how an outcome was established (resolved_by)


def check_task(task: object) -> str:
    """A task id the journal can key rows by: non-blank text (chapter 07)."""
    return check_text("task", task)


def check_step(step: object, number: int | None = None) -> Step:
    """A step the journal can record, or an error before anything is written:
    a ``Step`` numbered from 1 (``number`` where the plan puts it), a named
    action, arguments JSON can spell (no NaN, no infinity), flags that are
    bools (the string "false" is true to ``if``). Introduced in chapter 07."""
    if not isinstance(step, Step):
        raise TypeError(f"a journal step is a plan.Step, got {step!r}")
    check_count("step number", step.number)
    if step.number < 1 or number not in (None, step.number):
        where = "1 or more" if number is None else number
        raise ValueError(f"step number must be {where}, got {step.number}")
    check_text(f"step {step.number}'s action", step.action)
    if not isinstance(step.args, dict):
        raise TypeError(f"step {step.number}'s args must be a dict")
    try:
        canonical(step.args)  # the journal stores them; the key digests them
    except ValueError as bad:  # NaN or infinity: no JSON spells them
        raise ValueError(f"step {step.number}'s args: {bad}") from None
    check_flag(f"step {step.number}'s irreversible", step.irreversible)
    check_flag(f"step {step.number}'s gate", step.gate)
    return step


def check_action(step: Step, action: object) -> None:
    """The step's action can act and be asked: ``execute`` and ``probe``
    (chapter 07)."""
    if not all(callable(getattr(action, name, None)) for name in ("execute", "probe")):
        raise TypeError(f"step {step.number}: an Action with execute and probe")


def check_remaining(steps, first: int, actions) -> None:
    """The steps a run has left, numbered from ``first``: each a valid step
    with a registered action, checked before the run writes anything.

    Introduced in chapter 07."""
    for number, step in enumerate(steps, start=first):
        check_step(step, number)
    missing = {step.action for step in steps} - set(actions)
    if missing:
        raise KeyError(f"no action registered for {sorted(missing)}")
    for step in steps:
        check_action(step, actions[step.action])


def step_key(task: str, step: Step) -> str:
    """The step's operation key: the same task, step, action and args, same key.

    Introduced in chapter 07."""
    return operation_key(task, step.number, step.action, step.args)


def probe_gate(task: str, step: Step, action) -> dict:
    """Ask a verification gate's probe now: what it saw, or ``GateFailed``.

    A gate changes nothing, so it is probed BEFORE its intent: a failing
    gate leaves no row, nothing in doubt (chapter 09). The task is checked
    by ``step_key`` (``effects.operation_key``)."""
    check_action(check_step(step), action)
    passed, observed = action.probe(step.args, step_key(task, step))
    if not passed:
        raise GateFailed(step.number, observed)
    return observed


def step_row(conn: sqlite3.Connection, task: str, number: int):
    """Step ``number``'s row (its ``outcome``), or None; a read (chapter 07)."""
    return conn.execute(
        "SELECT outcome FROM journal WHERE task = :task AND step = :step",
        {"task": task, "step": number},
    ).fetchone()


def installed(conn: sqlite3.Connection) -> bool:
    """Whether the journal table exists; a read asks, it never creates it.

    Introduced in chapter 07."""
    return store.table_exists(conn, "journal")


def confirmed_count(conn: sqlite3.Connection, task: str) -> int:
    """How many steps have an outcome: steps 1..n, in order (chapter 07).

    Read from the task's LAST row alone, one walk down the primary key: only
    that row can lack its outcome. Where a resume starts costs the same for a
    journal of 10 rows and one of 10,000."""
    check_task(task)
    row = conn.execute(
        "SELECT step - CASE WHEN outcome IS NULL THEN 1 ELSE 0 END"
        " FROM journal WHERE task = :task"
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
    check_task(task)
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
    check_task(task)
    rows = conn.execute("SELECT * FROM journal WHERE task = :task ORDER BY step",
                        {"task": task}).fetchall() if installed(conn) else []
    decoded = ("args", "before_state", "outcome")
    return [{**dict(row), **{name: row[name] and json.loads(row[name])
                             for name in decoded}} for row in rows]


def resolutions(conn: sqlite3.Connection, task: str) -> dict[str, int]:
    """How the task's outcomes were established: by running or by a probe.

    Introduced in chapter 07; it only reads, like ``journal_status``."""
    check_task(task)
    rows = conn.execute(
        "SELECT resolved_by, count(*) FROM journal"
        " WHERE task = :task AND outcome IS NOT NULL GROUP BY resolved_by",
        {"task": task},
    ).fetchall() if installed(conn) else []
    return {RUN: 0, PROBE: 0, **{by: n for by, n in rows}}
