"""The steps of a workflow and what became of their effects (chapter 08).

A step (``run_step``) is one remote call between two version-checked
transitions of ``crashcourse.workflow``, each with its row here:
``attempt_step`` BEFORE the call (of two workers holding one version, only
one gets past it, so only one calls) and ``record_outcome`` AFTER it, whose
``happened`` says whether the effect exists. An attempt without an outcome
is ``in_doubt``: recovery asks the service by the step's operation key
before it calls again. A cancelled workflow gets ONE ``compensations`` row
per attempted step (``compensate``): undone, needs a person, cannot be
undone, or nothing to undo; ``final_report`` reads it all back from rows.
"""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple

from crashcourse import workflow
from crashcourse.boundary import boundary
from crashcourse.store import ensure_schema, immediate, sql_list, table_rows
from crashcourse.validate import canonical, check_text, clock

ATTEMPT, OUTCOME = "attempt", "outcome"  # the two rows of a step
# How a step stands, from its last row (``progress``).
NOT_STARTED, IN_DOUBT, DONE, NOT_DONE = "not_started", "in_doubt", "done", "not_done"
# What became of an attempted step's effect once the workflow stopped.
UNDONE, NEEDS_PERSON = "undone", "needs_person"
CANNOT_UNDO, NOTHING_TO_UNDO = "cannot_undo", "nothing_to_undo"
COMPENSATIONS = (UNDONE, NEEDS_PERSON, CANNOT_UNDO, NOTHING_TO_UNDO)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS workflow_steps (
    workflow_id   TEXT NOT NULL,
    version       INTEGER NOT NULL,  -- the transition that wrote this row
    step          TEXT NOT NULL,
    operation_key TEXT NOT NULL,
    phase         TEXT NOT NULL CHECK (phase IN {sql_list((ATTEMPT, OUTCOME))}),
    outcome       TEXT,              -- JSON with "happened", NULL: an attempt
    PRIMARY KEY (workflow_id, version),
    FOREIGN KEY (workflow_id, version) REFERENCES workflow_history
);
CREATE TABLE IF NOT EXISTS compensations (
    workflow_id      TEXT NOT NULL REFERENCES workflows (id),
    step             TEXT NOT NULL,
    operation_key    TEXT NOT NULL,  -- the effect's key
    action           TEXT NOT NULL,  -- what was done about it: released, ...
    compensation_key TEXT,           -- the undo's own operation key, if any
    status           TEXT NOT NULL CHECK (status IN {sql_list(COMPENSATIONS)}),
    note             TEXT NOT NULL,  -- for the person who reads it
    who              TEXT NOT NULL,
    at               REAL NOT NULL,
    PRIMARY KEY (workflow_id, step)  -- written once per step
)
"""
TABLES = ("workflows", "workflow_history", "workflow_steps", "compensations")


class Remote(namedtuple("_RemoteFields", "call probe undo")):
    """How one step reaches its service, and asks it, and undoes it (ch. 08).

    ``call(args, operation_key, token) -> (to_state, outcome)``: make the
    remote call; ``token`` is the fencing token (workflow id, version).
    ``probe(args, operation_key) -> (happened, seen)``: ask the service.
    ``undo(args, operation_key, token) -> (action, status, compensation_key,
    note)``: what to do about the effect once the workflow is cancelled.
    """

    __slots__ = ()


def install(conn: sqlite3.Connection) -> None:
    """Create the workflow tables, the steps and the compensations (ch. 08)."""
    workflow.install(conn)
    ensure_schema(conn, SCHEMA)


def attempt_step(conn: sqlite3.Connection, workflow_id: str, step: str, *,
                 expected_version: int, who: str) -> int:
    """running -> running with the step's ATTEMPT row, BEFORE its remote call;
    the new version, which the call carries as its fencing token (ch. 08)."""
    return step_move(conn, workflow_id, step, None, expected_version, who,
                     workflow.RUNNING)


def record_outcome(conn: sqlite3.Connection, workflow_id: str, step: str,
                   outcome: dict, *, expected_version: int, who: str,
                   to_state: str = workflow.RUNNING) -> int:
    """running -> ``to_state`` with the step's OUTCOME row, after its remote
    call or a probe; ``outcome["happened"]`` says if the effect exists (ch. 08)."""
    if not isinstance(outcome, dict) or not isinstance(outcome.get("happened"), bool):
        raise ValueError('outcome must be a dict with a bool "happened"')
    return step_move(conn, workflow_id, step, outcome, expected_version, who,
                     to_state)


def step_move(conn, workflow_id, step, outcome, expected_version, who,
              to_state) -> int:
    """The transition and the step's row in one transaction: an attempt of a
    step not done, or the outcome of one in doubt, else ValueError (ch. 08)."""
    workflow.check_move(workflow.RUNNING, expected_version, to_state, who, None)
    phase = ATTEMPT if outcome is None else OUTCOME
    with immediate(conn):  # the version decides first: a loser is refused
        version = workflow.move(conn, workflow_id, workflow.RUNNING,
                                expected_version, to_state, who, f"{phase} {step}")
        status = step_of(conn, workflow_id, step)
        allowed = status["status"] == IN_DOUBT if outcome else status["status"] != DONE
        if not allowed:  # rolls the move back too
            raise ValueError(f"step {step!r} is {status['status']}: no {phase} now")
        conn.execute(
            "INSERT INTO workflow_steps (workflow_id, version, step, operation_key,"
            " phase, outcome) VALUES (:id, :version, :step, :key, :phase, :outcome)",
            {"id": workflow_id, "version": version, "step": step, "phase": phase,
             "key": status["operation_key"],
             "outcome": None if outcome is None else canonical(outcome)})
    return version


def run_step(conn: sqlite3.Connection, workflow_id: str, step: dict,
             remote: Remote, *, version: int, who: str) -> tuple[str, int]:
    """One step of ``progress`` that is not done: probe it if in doubt, else
    attempt, call, record; the (state, version) it left (chapter 08).

    Boundaries ``before_remote:<step>`` and ``after_remote:<step>`` surround
    the call. A refused transition raises ``workflow.TransitionRefused``."""
    name, args, key = step["step"], step["args"], step["operation_key"]
    if step["status"] == IN_DOUBT:  # the call may have happened: ask first
        happened, seen = remote.probe(args, key)
        if happened:
            return workflow.RUNNING, record_outcome(
                conn, workflow_id, name, {"happened": True, "probed": seen},
                expected_version=version, who=who)
    version = attempt_step(conn, workflow_id, name, expected_version=version,
                           who=who)
    boundary(f"before_remote:{name}")
    to_state, outcome = remote.call(args, key, (workflow_id, version))
    boundary(f"after_remote:{name}")
    return to_state, record_outcome(conn, workflow_id, name, outcome,
                                    expected_version=version, who=who,
                                    to_state=to_state)


def progress(conn: sqlite3.Connection, workflow_id: str) -> list[dict]:
    """Each recorded step, in order: ``step``, ``args``, ``operation_key``,
    ``status`` from its last row (not_started, in_doubt, done, not_done: a
    refusal, which may be attempted again), the last ``outcome``, and its
    ``compensation`` row or None (chapter 08)."""
    chosen = workflow.read(conn, workflow_id)["choices"]
    last = {row["step"]: row["outcome"] for row in conn.execute(
        "SELECT step, outcome FROM workflow_steps WHERE workflow_id = :id"
        " ORDER BY version", {"id": workflow_id})}
    made = {row["step"]: dict(row) for row in conn.execute(
        "SELECT * FROM compensations WHERE workflow_id = :id", {"id": workflow_id})}
    steps = []
    for choice in chosen:
        name = choice["step"]
        outcome = json.loads(last[name]) if last.get(name) else None
        status = (NOT_STARTED if name not in last else IN_DOUBT if outcome is None
                  else DONE if outcome["happened"] else NOT_DONE)
        steps.append({**choice, "status": status, "outcome": outcome,
                      "compensation": made.get(name)})
    return steps


def step_of(conn: sqlite3.Connection, workflow_id: str, step: str) -> dict:
    """One step of ``progress``; ValueError if the workflow has no such step."""
    found = [row for row in progress(conn, workflow_id) if row["step"] == step]
    if not found:
        raise ValueError(f"workflow {workflow_id!r} has no step {step!r}")
    return found[0]


def record_compensation(conn: sqlite3.Connection, workflow_id: str, step: str, *,
                        action: str, status: str, note: str, who: str,
                        compensation_key: str | None = None) -> bool:
    """Write, once, what was done about one attempted step's effect of a
    cancelled or failed workflow; False if that step had its row (ch. 08)."""
    for name, text in (("action", action), ("note", note), ("who", who)):
        check_text(name, text)
    if status not in COMPENSATIONS:
        raise ValueError(f"status must be one of {COMPENSATIONS}, got {status!r}")
    with immediate(conn):
        state = workflow.read(conn, workflow_id)["state"]
        if state not in (workflow.CANCELLED, workflow.FAILED):
            raise ValueError(f"workflow {workflow_id!r} is {state}: nothing to undo")
        key = step_of(conn, workflow_id, step)["operation_key"]
        return conn.execute(
            "INSERT INTO compensations (workflow_id, step, operation_key, action,"
            " compensation_key, status, note, who, at) VALUES (:id, :step, :key,"
            " :action, :compensation_key, :status, :note, :who, :at)"
            " ON CONFLICT (workflow_id, step) DO NOTHING",
            {"id": workflow_id, "step": step, "key": key, "action": action,
             "compensation_key": compensation_key, "status": status,
             "note": note, "who": who, "at": clock()}).rowcount == 1


def compensate(conn: sqlite3.Connection, workflow_id: str, remotes: dict, *,
               who: str) -> dict:
    """Settle every attempted step of a cancelled (or failed) workflow once:
    a step in doubt is probed; an effect that exists gets its ``undo``, one
    that does not ``nothing_to_undo``. Returns ``final_report`` (chapter 08).

    Run it when no worker can still be between an attempt and its call (it
    exited, or was killed): a probe cannot see a call not yet made."""
    seen = workflow.read(conn, workflow_id)
    if seen["state"] not in (workflow.CANCELLED, workflow.FAILED):
        raise ValueError(f"workflow {workflow_id!r} is {seen['state']}: "
                         "only a cancelled or failed one is compensated")
    for step in progress(conn, workflow_id):
        if step["compensation"] or step["status"] in (NOT_STARTED, NOT_DONE):
            continue  # settled already, or no effect was ever attempted
        remote, args, key = remotes[step["step"]], step["args"], step["operation_key"]
        if step["status"] == DONE or remote.probe(args, key)[0]:
            action, status, undo_key, note = remote.undo(
                args, key, (workflow_id, seen["version"]))
        else:
            action, status, undo_key, note = (
                "none", NOTHING_TO_UNDO, None, "the service has no such effect")
        record_compensation(conn, workflow_id, step["step"], action=action,
                            status=status, note=note, who=who,
                            compensation_key=undo_key)
    return final_report(conn, workflow_id)


def final_report(conn: sqlite3.Connection, workflow_id: str) -> dict:
    """The state and each step's fate, from rows only (chapter 08):
    ``completed`` (its effect exists), and of those ``undone``,
    ``needs_person`` and ``cannot_undo``; ``in_doubt`` (attempted, outcome
    unknown); ``not_done``; and the ``compensations`` rows themselves."""
    steps = progress(conn, workflow_id)
    fate = {s["step"]: s["compensation"]["status"] if s["compensation"]
            else s["status"] for s in steps}

    def named(*fates: str) -> list[str]:
        return [step for step, seen in fate.items() if seen in fates]

    state = workflow.current(workflow.read(conn, workflow_id))
    return {"workflow_id": workflow_id, **state,
            "final": state["state"] in workflow.FINAL,
            "completed": named(DONE, UNDONE, NEEDS_PERSON, CANNOT_UNDO),
            "undone": named(UNDONE), "needs_person": named(NEEDS_PERSON),
            "cannot_undo": named(CANNOT_UNDO), "in_doubt": named(IN_DOUBT),
            "not_done": named(NOT_STARTED, NOT_DONE, NOTHING_TO_UNDO),
            "compensations": [s["compensation"] for s in steps if s["compensation"]]}


def snapshot(conn: sqlite3.Connection) -> dict:
    """Every durable row of the four workflow tables, for evidence (ch. 08)."""
    return {table: table_rows(conn, table) for table in TABLES}
