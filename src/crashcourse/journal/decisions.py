"""The person who decides: resume, unwind, or hand to daylight (chapter 09).

After a stop or a kill the journal (chapter 07) says where a task stands; a
person on the rota takes one of three decisions, each kept as a row of
``decisions`` (who, when, what the journal showed them):

* ``resume``: wait out the lease of a holder that stopped working (the
  journal runs under a claim, chapter 07; a lease renewed meanwhile means
  someone is at work: ``journal.TaskHeld``), then re-run every verification
  gate of the stored plan against the world as it is NOW (a gate passed
  hours ago proves nothing today). One fails: ``GateFailed``, nothing
  written or run. All pass: lift the pause flag, claim the task and go on
  through the journal (``journal.run_task``).
* ``unwind``: wait out a lease the same way, cancel the task's work so that
  no claim is granted on it again, then walk the journal newest first, a
  step in doubt settled first by its probe (once the lease of the claim that
  wrote it is over). A completed reversible step goes back to its
  ``before_state`` through its action's ``restore``, under an operation key
  of its own, intent first. The restore is a COMPARE-AND-SET (chapter 08's
  idea): it puts the target back only while the target still shows the end
  state the step gave it, checked inside the target's own write; a target
  someone changed since raises ``ChangedSince`` and is LEFT as found, with a
  row that says so, for a person. An irreversible step (a mail) cannot be
  taken back and becomes a COMPENSATION record for a person. An unwound task
  is never resumed.
* ``hand_to_daylight``: stay stopped, out of band first (every credential of
  the task's holder revoked at the broker, and none issued to it again until
  a person grants one: ``broker.revoke_holder``), then in band (pause flag
  set, scheduler stopped), and write a hand-over, a markdown file and the
  decision's row: the step in doubt, the irreversible effects already done,
  the credentials revoked, the exact resume command.
"""
from __future__ import annotations

import json
import os
import shlex
import sqlite3
import time

from crashcourse import control, journal
from crashcourse.effects import operation_key
from crashcourse.journal.plan import Plan, load_plan
from crashcourse.services.broker import revoke_holder
from crashcourse.store import (
    check_backend,
    dialect,
    ensure_schema,
    immediate,
    sql_list,
    table_exists,
)
from crashcourse.store.dialect import POSTGRES, SQLITE
from crashcourse.validate import check_text, clock

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["RUNS_ON", "DECISIONS", "NOT_PERFORMED", "LEFT", "SCHEMA",
    "DecisionRefused", "ChangedSince", "install", "history", "unwinds", "shown",
    "resume", "unwind", "hand_to_daylight", "markdown", "DAYLIGHT", "RESUME",
    "UNWIND"]

# The databases install() accepts (store.check_backend): a store on any other
# is refused before anything is written.
RUNS_ON = (SQLITE, POSTGRES)

RESUME, UNWIND, DAYLIGHT = "resume", "unwind", "daylight"
DECISIONS = (RESUME, UNWIND, DAYLIGHT)
RESTORE, COMPENSATION = "restore", "compensation"
NOT_PERFORMED = "not_performed"  # a step in doubt whose probe found nothing
LEFT = "left_as_found"  # a restore refused: someone changed the target since

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS decisions (
    seq      {{identity_key}},
    task     TEXT NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN {sql_list(DECISIONS)}),
    who      TEXT NOT NULL,
    at       REAL NOT NULL,
    detail   TEXT NOT NULL           -- JSON: what the journal showed, and why
);
CREATE TABLE IF NOT EXISTS unwinds (
    task          TEXT NOT NULL,
    step          INTEGER NOT NULL,
    operation_key TEXT NOT NULL UNIQUE,  -- the undo's own key, not the step's
    action        TEXT NOT NULL,         -- the step's action
    kind          TEXT NOT NULL CHECK (kind IN {sql_list((RESTORE, COMPENSATION))}),
    target        TEXT NOT NULL,         -- JSON: before_state, or what stays done
    outcome       TEXT,                  -- NULL: restore begun, not confirmed
    PRIMARY KEY (task, step)
)
"""


class DecisionRefused(RuntimeError):
    """A decision the task's history rules out; nothing written (chapter 09)."""


class ChangedSince(RuntimeError):
    """Raised by an action's ``restore`` whose compare-and-set found the
    target no longer in the state the step left it in (someone changed it
    since): nothing restored, ``found`` is what it shows now (chapter 09)."""

    def __init__(self, message: str, found: object = None):
        super().__init__(message)
        self.found = found


def install(conn: sqlite3.Connection) -> None:
    """Create the decisions and unwinds tables, on either backend (chapter 09)."""
    check_backend(conn, RUNS_ON, __name__)
    ensure_schema(conn, SCHEMA.format(identity_key=dialect(conn).identity_key))


def _rows(conn: sqlite3.Connection, table: str, task: str, order: str) -> list:
    made = table_exists(conn, table)  # a read: nothing is created by looking
    return [dict(row) for row in conn.execute(
        f"SELECT * FROM {table} WHERE task = :task ORDER BY {order}", {"task": task}
    ).fetchall()] if made else []


def history(conn: sqlite3.Connection, task: str) -> list[dict]:
    """The task's decisions, oldest first, ``detail`` decoded; a read (chapter 09)."""
    return [{**row, "detail": json.loads(row["detail"])}
            for row in _rows(conn, "decisions", task, "seq")]


def unwinds(conn: sqlite3.Connection, task: str) -> list[dict]:
    """The task's restores and compensation records, newest step first, JSON
    decoded (``outcome`` None: a restore begun, not confirmed); a read (chapter 09)."""
    return [{**row, "target": json.loads(row["target"]),
             "outcome": row["outcome"] and json.loads(row["outcome"])}
            for row in _rows(conn, "unwinds", task, "step DESC")]


def shown(conn: sqlite3.Connection, task: str, plan: Plan) -> dict:
    """What the journal shows the person deciding: its counts, the step in
    doubt, and the irreversible steps already done (chapter 09)."""
    entries = journal.entries(conn, task)
    fields = ("step", "action", "args", "operation_key")
    doubt = [{f: row[f] for f in fields} for row in entries if row["outcome"] is None]
    irreversible = [{**{f: row[f] for f in fields}, "outcome": row["outcome"]}
                    for row in entries if row["outcome"] is not None
                    and plan.steps[row["step"] - 1].irreversible]
    return {"journal": journal.journal_status(conn, task, plan).summary(),
            "in_doubt": doubt[0] if doubt else None,
            "irreversible_done": irreversible}


def _checked(conn: sqlite3.Connection, task: str, actions: dict, who: str) -> Plan:
    """The door of every decision: a person, a stored plan, an action per step."""
    check_text("who", who)
    plan = load_plan(conn, task)
    missing = {step.action for step in plan.steps} - set(actions)
    if missing:
        raise KeyError(f"no action registered for {sorted(missing)}")
    return plan


def _record(conn: sqlite3.Connection, task: str, decision: str, who: str,
            detail: dict) -> int:  # the decision's row, before what it does
    install(conn)
    with immediate(conn):
        return conn.execute(
            "INSERT INTO decisions (task, decision, who, at, detail)"
            " VALUES (:task, :decision, :who, :at, :detail) RETURNING seq",
            {"task": task, "decision": decision, "who": who, "at": clock(None),
             "detail": json.dumps(detail, sort_keys=True)},
        ).fetchone()["seq"]


def resume(conn: sqlite3.Connection, task: str, actions: dict, *, who: str,
           owner: str | None = None, ttl: float = journal.DEFAULT_TTL_S) -> dict:
    """Re-run the plan's gates now, then lift the pause and go on under a
    claim held by ``owner`` (default ``who``) for ``ttl`` s (chapter 09).

    Returns the gates' observations and ``run_task``'s counts. A failing gate
    raises ``GateFailed``; a task already unwound, ``DecisionRefused``; a
    task another holder is working on, ``journal.TaskHeld``: in each case
    nothing is written and nothing runs."""
    plan = _checked(conn, task, actions, who)
    if any(row["decision"] == UNWIND for row in history(conn, task)):
        raise DecisionRefused(f"task {task} was unwound; it cannot be resumed")
    journal.wait_out(conn, task)  # a killed or frozen holder's lease runs out
    gates = {step.number: journal.probe_gate(task, step, actions[step.action])
             for step in plan.steps if step.gate}
    _record(conn, task, RESUME, who, {**shown(conn, task, plan),
                                      "gates_passed": sorted(gates)})
    control.set_paused(conn, False)  # the person's decision lifts the stop
    done = journal.run_task(conn, task, plan, actions, owner=owner or who, ttl=ttl,
                            should_stop=lambda: control.is_paused(conn))
    return {"gates": gates, "done": done}


def _undo(conn: sqlite3.Connection, task: str, step, row: dict, action) -> str:
    """Restore one step, or record that it cannot be; intent first, own key.
    Which result it goes under: RESTORE, COMPENSATION or LEFT."""
    kind = COMPENSATION if step.irreversible else RESTORE
    target = (row["before_state"] if kind == RESTORE
              else {"args": step.args, "outcome": row["outcome"]})
    key = operation_key(task, step.number, f"{kind}_{step.action}", target)
    with immediate(conn):
        conn.execute(
            "INSERT INTO unwinds (task, step, operation_key, action, kind, target)"
            " VALUES (:task, :step, :key, :action, :kind, :target)"
            " ON CONFLICT (task, step) DO NOTHING",
            {"task": task, "step": step.number, "key": key, "action": step.action,
             "kind": kind, "target": json.dumps(target, sort_keys=True)},
        )
        done = conn.execute("SELECT outcome FROM unwinds WHERE task = :task"
                            " AND step = :step",
                            {"task": task, "step": step.number}).fetchone()
    outcome = done["outcome"] and json.loads(done["outcome"])
    if outcome is None:  # a restore is an end state: repeating is safe
        outcome = (_restore(step, target, key, action) if kind == RESTORE
                   else {"cannot_undo": step.action,
                         "to_do": "tell the people it reached; it stays done"})
        with immediate(conn):
            conn.execute("UPDATE unwinds SET outcome = :outcome"
                         " WHERE task = :task AND step = :step",
                         {"task": task, "step": step.number,
                          "outcome": json.dumps(outcome, sort_keys=True)})
    return LEFT if LEFT in outcome else kind


def _restore(step, before: dict, key: str, action) -> dict:
    """The action's compare-and-set restore, or what it found instead."""
    try:
        return action.restore(step.args, before, key)
    except ChangedSince as changed:  # someone else's change: never overwritten
        return {LEFT: changed.found,
                "to_do": "changed by someone else since this run: ask them"}


def unwind(conn: sqlite3.Connection, task: str, actions: dict, *, who: str) -> dict:
    """Undo the task's completed steps, newest first (chapter 09).

    Returns the step numbers restored, recorded as compensation, left as
    found (a restore's compare-and-set saw someone else's change:
    ``ChangedSince``) and found not performed. Every reversible step's action
    needs a ``restore`` (checked before anything is written). Running it
    again finishes an interrupted unwind and repeats nothing already
    restored."""
    plan = _checked(conn, task, actions, who)
    lacking = sorted({s.action for s in plan.steps if not (s.irreversible or s.gate)
                      and actions[s.action].restore is None})
    if lacking:
        raise ValueError(f"reversible actions without a restore: {lacking}")
    journal.wait_out(conn, task)  # no holder may act while the task is undone
    _record(conn, task, UNWIND, who, shown(conn, task, plan))
    journal.cancel_task(conn, task)  # and none is granted the task again
    result = {RESTORE: [], COMPENSATION: [], LEFT: [], NOT_PERFORMED: []}
    for row in reversed(journal.entries(conn, task)):
        step = plan.steps[row["step"] - 1]
        if step.gate:
            continue  # a gate changed nothing
        action = actions[step.action]
        if row["outcome"] is None:  # in doubt: the target says if it happened
            if not journal.lease_over(conn, task, row["generation"])[0]:
                raise journal.HolderMayStillAct(  # wait_out saw it over: a clock
                    f"step {step.number}'s holder may still act on it")
            happened, seen = action.probe(step.args, row["operation_key"])
            if not happened:
                result[NOT_PERFORMED].append(step.number)
                continue
            row = {**row, "outcome": seen}
        result[_undo(conn, task, step, row, action)].append(step.number)
    return result


def hand_to_daylight(conn: sqlite3.Connection, task: str, *, who: str, reason: str,
                     resume_command: list[str], path: str, broker: str,
                     holder: str) -> dict:
    """Stay stopped and hand the task over to the day shift (chapter 09).

    First the stop that does not depend on the worker: every credential of
    ``holder`` is revoked at ``broker`` (the broker's file), and it is issued
    none until a person grants it again (``broker.revoke_holder``; a frozen
    holder inside a guarded write: ``RevocationBlocked``, nothing done). Then
    the in-band ones: the pause flag, the scheduler switch. The hand-over is
    recorded as the decision's row and written as markdown to ``path`` (a
    new file: an existing one is refused before anything is written).
    Returns it."""
    check_text("who", who)
    check_text("reason", reason)
    check_text("holder", holder)
    if not resume_command or not all(isinstance(a, str) and a for a in resume_command):
        raise ValueError("resume_command must be a list of non-empty strings")
    if os.path.exists(path):
        raise FileExistsError(f"{path} exists; a hand-over is never overwritten")
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise FileNotFoundError(f"no folder to write {path} in")
    plan = load_plan(conn, task)
    stopped = revoke_holder(broker, holder, who)  # out of band, before the rest
    handover = {"task": task, "who": who, "reason": reason, "at": clock(None),
                "holder": holder, "revoked": stopped["revoked"],
                "revoked_at": stopped["revoked_at"],
                "command": shlex.join(resume_command), **shown(conn, task, plan)}
    control.set_paused(conn, True)
    control.stop_scheduler(conn, who, reason)
    _record(conn, task, DAYLIGHT, who, handover)
    with open(path, "x", encoding="utf-8") as handle:
        handle.write(markdown(handover))
    return handover


def markdown(handover: dict) -> str:
    """The hand-over as a person reads it at the start of the day (chapter 09)."""
    doubt, done = handover["in_doubt"], handover["irreversible_done"]
    counts = ", ".join(f"{n} {state}" for state, n in handover["journal"].items())
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(handover["at"]))
    lines = [
        f"# Hand-over: {handover['task']}", "",
        f"Stopped by {handover['who']} at {when}: {handover['reason']}.",
        f"Every credential of `{handover['holder']}` is revoked at the broker"
        f" ({len(handover['revoked'])}), and it gets no new one until a person"
        " grants it again. The pause flag is set and the scheduler is stopped.",
        "", f"Journal: {counts}.", "", "## The step in doubt", "",
        (f"Step {doubt['step']} ({doubt['action']} {json.dumps(doubt['args'])}),"
         f" operation key `{doubt['operation_key']}`: ask its target first."
         if doubt else "None: every journal row has its outcome."),
        "", "## Irreversible effects already done", "",
        *([f"- step {e['step']} ({e['action']} {json.dumps(e['args'])}):"
           f" {json.dumps(e['outcome'])}" for e in done] or ["None."]),
        "", "## To resume (re-runs the gates first, then lifts the pause)", "",
        f"Grant `{handover['holder']}` again at the broker (`broker.grant`),"
        " then run:", "", "```", handover["command"], "```", "",
    ]
    return "\n".join(lines)
