"""Write the intent first: the journal (chapter 07).

A step's row is its INTENT (with what the probe saw before: ``before_state``),
committed before the step acts, then its OUTCOME. A resumed run reads it:

* outcome recorded: skip the step;
* intent without outcome (the step in doubt): ask the target system through
  the step's probe. Nothing there: clear the intent and run the step. Found:
  record what the probe saw as the outcome, ``resolved_by = 'probe'``;
* no row: the probe is asked before the intent too, and a step the target
  already shows done (the journal lost its tail) is recorded the same way,
  never performed twice (issue 14).

ONE COMMIT PER STEP. Only the intent must be durable before the action, and
nothing reads an outcome before the next step begins. So ``run_plan`` holds
step N's outcome (``Pending``) and commits it in ONE transaction with step
N+1's intent, after N+1's probe; the last outcome of a run commits alone
(last step, stop, failed gate, error); ``run_step`` alone commits its own.
Each commit writes the held outcome before the new intent, so no committed
state has two rows without an outcome: at most ONE step is in doubt, and the
partial unique index ``one_in_doubt`` would refuse a second. The price: the
step just performed reads as in doubt until the next intent commits.

``PHASES``, where a harness may kill step N, and what that leaves (changed by
one commit per step: ``before_intent`` left N-1 confirmed and
``after_outcome`` N, nothing in doubt):

* ``before_intent`` (before N's probe and intent): N-1 in doubt, acted on;
  nothing in doubt if N is this process's first step or follows a probe's
  answer;
* ``after_intent``: N-1 confirmed, N in doubt, not acted on;
* ``after_action``: N acted on, still in doubt;
* ``after_outcome``: N's outcome held, not written: as at ``after_action``;
  a stop asked for here (chapter 09) ends the run with N confirmed.

The reads (``confirmed_count``, ``journal_status``, ``entries``,
``resolutions``, ``check_gate``) and the checks at the door are in
``journal_reads`` and answer here too. Chapter 09 adds ``should_stop``.
"""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple

from crashcourse.boundary import boundary
from crashcourse.journal_reads import (  # noqa: F401  (journal.journal_status etc.)
    PROBE,
    RUN,
    JournalStatus,
    check_action,
    check_gate,
    check_remaining,
    check_step,
    check_task,
    confirmed_count,
    entries,
    journal_status,
    resolutions,
    step_key,
    step_row,
)
from crashcourse.plan import Plan, Step
from crashcourse.store import ensure_schema, immediate
from crashcourse.validate import check_count

PHASES = ("before_intent", "after_intent", "after_action", "after_outcome")
SKIP = "skip"  # how run_step settled a step: SKIP, PROBE or RUN
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
_dumps = json.JSONEncoder(sort_keys=True).encode  # json.dumps(x, sort_keys=True)


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


def _withdraw(conn, task: str, number: int) -> None:
    """Delete an intent whose action provably never ran."""
    with immediate(conn):
        conn.execute("DELETE FROM journal WHERE task = :task AND step = :step"
                     " AND outcome IS NULL", {"task": task, "step": number})


def _resolve_in_doubt(conn, task: str, step: Step, action: Action) -> dict | None:
    """Ask the target about a step in doubt; its observation if it happened."""
    done, observed = action.probe(step.args, step_key(task, step))
    if not done:  # provably not there: forget the intent, run the step again
        _withdraw(conn, task, step.number)
        return None
    with immediate(conn):
        conn.execute(
            f"UPDATE journal SET outcome = :outcome, resolved_by = '{PROBE}'"
            " WHERE task = :task AND step = :step AND outcome IS NULL",
            {"task": task, "step": step.number, "outcome": _dumps(observed)},
        )
    return observed


class Pending:
    """A step's outcome the worker holds and the journal does not yet: it
    commits in ONE transaction with the next step's intent (chapter 07).

    The UPDATE goes first, then the INSERT: the partial unique index is
    checked statement by statement, and so is never asked to hold two."""

    __slots__ = ("conn", "task", "step", "outcome")

    def __init__(self, conn: sqlite3.Connection, task: str):
        self.conn, self.task = conn, check_task(task)
        self.step = self.outcome = None

    def hold(self, step: int, result) -> None:
        """Keep step ``step``'s outcome until the next commit."""
        self.step, self.outcome = check_count("step", step), _dumps(result)

    def commit(self, intent: dict | None = None) -> None:
        """The outcome held (if any) and ``intent`` (if any), in one commit;
        an intent may carry its outcome, found by the probe (``run_step``)."""
        if self.step is None and intent is None:
            return
        with immediate(self.conn):
            if self.step is not None:
                self.conn.execute(
                    f"UPDATE journal SET outcome = :outcome, resolved_by = '{RUN}'"
                    " WHERE task = :task AND step = :step AND outcome IS NULL",
                    {"task": self.task, "step": self.step, "outcome": self.outcome})
            if intent is not None:
                self.conn.execute(
                    "INSERT INTO journal (task, step, operation_key, action, args,"
                    " before_state, outcome, resolved_by) VALUES (:task, :step,"
                    " :operation_key, :action, :args, :before, :outcome, :by)",
                    {"outcome": None, "by": None, **intent})
        self.step = self.outcome = None


def run_step(conn: sqlite3.Connection, task: str, step: Step, action: Action, *,
             pending: Pending | None = None, should_stop=None) -> str:
    """Run one step through the journal; says how: skip, probe or run (chapter 07).

    On its own it commits its intent, acts, and commits its outcome. In a run
    (``pending``, from ``run_plan``) the previous outcome commits with this
    intent, this step's outcome is left in ``pending`` for the next, and
    ``should_stop`` is asked after that commit: on True the intent is
    withdrawn, ``STOPPED`` (chapter 09). A step the target already shows
    done before its intent (the journal lost its tail: chapter 07's deleted
    ``-wal``) is recorded as the probe found it, ``PROBE``, and not performed
    again; a gate's probe is its check, so a gate still runs."""
    check_task(task)
    check_action(check_step(step), action)
    held = pending is not None and pending.step is not None
    row = None if held else step_row(conn, task, step.number)  # held: no row yet
    if row is not None and row["outcome"] is not None:
        return SKIP
    if row is not None and _resolve_in_doubt(conn, task, step, action) is not None:
        return PROBE
    name, key = f"step-{step.number}", step_key(task, step)
    alone, pending = pending is None, pending or Pending(conn, task)
    boundary(f"{name}:before_intent")
    done, before = action.probe(step.args, key)
    intent = {"task": task, "step": step.number, "operation_key": key,
              "action": step.action, "args": _dumps(step.args),
              "before": _dumps(before)}
    if done and not step.gate:  # already there: record it as found, never redo
        pending.commit({**intent, "outcome": intent["before"], "by": PROBE})
        return PROBE
    pending.commit(intent)
    if should_stop is not None and should_stop():  # every earlier outcome is in
        _withdraw(conn, task, step.number)
        return STOPPED
    boundary(f"{name}:after_intent")
    result = action.execute(step.args, key)
    boundary(f"{name}:after_action")
    pending.hold(step.number, result)
    if alone:
        pending.commit()
    boundary(f"{name}:after_outcome")
    return RUN


def run_plan(conn: sqlite3.Connection, task: str, plan: Plan,
             actions: dict[str, Action], *, should_stop=None) -> dict[str, int]:
    """Every step of ``plan`` in order; how many were skipped, probed, run.

    Where to resume comes from the journal's last row alone, so it costs the
    same for a plan of 10 steps and one of 10,000 (chapter 07). Each outcome
    commits with the next intent; the last one, alone, however the run ends.
    ``should_stop()`` is asked once per remaining step, before it acts and
    with every earlier outcome in the journal (chapter 09): first thing when
    no outcome is held, else just after the commit that writes it. On True
    the run ends with nothing in doubt, ``STOPPED``: N. Every step left is
    checked first (``check_remaining``): a bad one raises, nothing written.
    """
    if not isinstance(plan, Plan):
        raise TypeError(f"run_plan runs a plan.Plan, got {plan!r}")
    skipped, stop = confirmed_count(conn, task), should_stop or (lambda: False)
    remaining = plan.steps[skipped:]  # read once: a stored plan reads rows
    check_remaining(remaining, skipped + 1, actions)  # before any write
    install(conn)
    done, pending = {SKIP: skipped, PROBE: 0, RUN: 0}, Pending(conn, task)
    try:
        for step in remaining:
            held = pending.step is not None  # the previous outcome, not written
            if not held and stop():
                return {**done, STOPPED: step.number}
            if step.gate:
                check_gate(task, step, actions[step.action])
            how = run_step(conn, task, step, actions[step.action], pending=pending,
                           should_stop=stop if held else None)
            if how == STOPPED:
                return {**done, STOPPED: step.number}
            done[how] += 1
    finally:
        pending.commit()  # the last outcome, alone
    return done
