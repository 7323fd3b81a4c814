"""A workflow you can read afterwards: its states and moves (chapter 08).

A workflow is one durable row with a ``state`` and a ``version``. It moves
only by ``transition``: ONE compare-and-set on (state, version) inside one
write transaction, together with its history row (from, to, version, who,
when). A refused move raises ``TransitionRefused`` with its reason:
``stale_version`` (someone moved it on since you read it) or
``illegal_move`` (the pair is not in ``MOVES``). Whoever makes version N+1 is
the only one who did; the history keeps who that was.

The choices (what to do, step by step) are recorded when the workflow is
created, each step with an operation key derived there, once: a replay reads
them and never asks the model again. The steps' own rows, the compensations
and the final report are in ``crashcourse.workflow.steps``.

This is the worker's own store: every function takes an open connection.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3

from crashcourse.boundary import STOP_AT_ENV, boundary
from crashcourse.effects import operation_key
from crashcourse.store import check_backend, ensure_schema, immediate, sql_list
from crashcourse.store.dialect import POSTGRES, SQLITE
from crashcourse.validate import canonical, check_count, check_text, clock

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["RUNS_ON", "STATES", "FINAL", "MOVES", "WORKFLOW_ID", "STEP_NAME",
    "SCHEMA", "TransitionRefused", "install", "create", "read", "transition",
    "inside", "cancel", "history", "check_move", "move", "current",
    "write_history", "APPLIED", "ILLEGAL_MOVE", "PENDING", "RUNNING",
    "STALE_VERSION", "WAITING", "steps"]

# The databases install() accepts (store.check_backend): a store on any other
# is refused before anything is written.
RUNS_ON = (SQLITE, POSTGRES)

PENDING, RUNNING, WAITING = "pending", "running", "waiting_for_approval"
APPLIED, FAILED, CANCELLED = "applied", "failed", "cancelled"
STATES = (PENDING, RUNNING, WAITING, APPLIED, FAILED, CANCELLED)
FINAL = (APPLIED, FAILED, CANCELLED)  # no move leaves these
# Every legal move, and only those: ``transition`` refuses any other pair, and
# the chapter draws its state diagram from this table.
MOVES = (
    (PENDING, RUNNING),  # a worker starts
    (PENDING, CANCELLED),
    (RUNNING, RUNNING),  # a step's attempt or outcome is recorded
    (RUNNING, WAITING),  # the payment service wants a person's approval
    (RUNNING, APPLIED),  # every step's effect happened
    (RUNNING, FAILED),  # a service refused for good
    (RUNNING, CANCELLED),
    (WAITING, RUNNING),  # a later run, once a person approved
    (WAITING, CANCELLED),
)
STALE_VERSION, ILLEGAL_MOVE = "stale_version", "illegal_move"
WORKFLOW_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # safe in a URL
STEP_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")  # safe in a boundary name

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS workflows (
    id        TEXT PRIMARY KEY,
    state     TEXT NOT NULL CHECK (state IN {sql_list(STATES)}),
    version   INTEGER NOT NULL CHECK (version >= 0),
    choices TEXT NOT NULL  -- canonical JSON [{{step, args, operation_key}}]
);
CREATE TABLE IF NOT EXISTS workflow_history (
    workflow_id TEXT NOT NULL REFERENCES workflows (id),
    version     INTEGER NOT NULL,    -- the version this transition made
    from_state  TEXT,                -- NULL: created
    to_state    TEXT NOT NULL,
    who         TEXT NOT NULL,
    at          REAL NOT NULL,
    note        TEXT,
    PRIMARY KEY (workflow_id, version)  -- one author per version, ever
)
"""


class TransitionRefused(Exception):
    """A move that did not happen: ``reason`` (``stale_version`` or
    ``illegal_move``) and the ``current`` {state, version} it found (ch. 08)."""

    def __init__(self, reason: str, current: dict):
        super().__init__(f"{reason}: the workflow is {current['state']}"
                         f" at version {current['version']}")
        self.reason, self.current = reason, current


def install(conn: sqlite3.Connection) -> None:
    """Create the workflows and their history in the worker's file (ch. 08)."""
    check_backend(conn, RUNS_ON, __name__)
    ensure_schema(conn, SCHEMA)


def create(conn: sqlite3.Connection, workflow_id: str, choices: dict, *,
           who: str) -> dict:
    """Record a PENDING workflow at version 0: ``choices`` ({step: args}, in
    the order to run) and each step's operation key, derived here once.
    Returns ``read`` of it; bad input or an existing id: ValueError (ch. 08)."""
    if not isinstance(workflow_id, str) or not WORKFLOW_ID.fullmatch(workflow_id):
        raise ValueError(f"workflow id must match {WORKFLOW_ID.pattern}")
    check_text("who", who)
    if not isinstance(choices, dict) or not choices:
        raise ValueError("choices must be a non-empty dict of step -> args")
    steps = []
    for number, (step, args) in enumerate(choices.items(), start=1):
        if not (isinstance(step, str) and STEP_NAME.fullmatch(step)
                and isinstance(args, dict)):
            raise ValueError(f"each step is a name ({STEP_NAME.pattern}): a dict")
        key = operation_key(workflow_id, number, step, args)
        steps.append({"step": step, "args": args, "operation_key": key})
    row = {"id": workflow_id, "choices": canonical(steps)}
    with immediate(conn):
        if conn.execute("SELECT 1 FROM workflows WHERE id = :id", row).fetchone():
            raise ValueError(f"workflow {workflow_id!r} exists")
        conn.execute("INSERT INTO workflows (id, state, version, choices)"
                     f" VALUES (:id, '{PENDING}', 0, :choices)", row)
        write_history(conn, workflow_id, 0, None, PENDING, who, "created")
    return read(conn, workflow_id)


def read(conn: sqlite3.Connection, workflow_id: str) -> dict:
    """``workflow_id``, ``state``, ``version`` and the recorded ``choices``
    (a list of {step, args, operation_key}); KeyError if unknown (ch. 08)."""
    row = conn.execute("SELECT * FROM workflows WHERE id = :id",
                       {"id": workflow_id}).fetchone()
    if row is None:
        raise KeyError(f"no workflow {workflow_id!r}")
    return {"workflow_id": row["id"], "state": row["state"],
            "version": row["version"], "choices": json.loads(row["choices"])}


def transition(conn: sqlite3.Connection, workflow_id: str, *, expected_state: str,
               expected_version: int, to_state: str, who: str,
               note: str | None = None) -> int:
    """Move from (expected_state, expected_version) to ``to_state``, only along
    ``MOVES``; returns the new version (chapter 08).

    Bad input raises ValueError or TypeError, an unknown workflow KeyError, a
    refused move ``TransitionRefused``; none of them writes anything."""
    check_move(expected_state, expected_version, to_state, who, note)
    with immediate(conn):
        version = move(conn, workflow_id, expected_state, expected_version,
                       to_state, who, note)
        inside(f"moving:{to_state}")  # the write lock held, not yet committed
        return version


def inside(name: str) -> None:
    """A boundary inside a write transaction (``moving:<state>``) where a
    harness may hold, and freeze, a worker with the workflow's write lock
    taken (issue 35); only a process asked to stop there announces it, so
    in-process observers hear the same boundaries as before."""
    if os.environ.get(STOP_AT_ENV) == name:
        boundary(name)


def cancel(conn: sqlite3.Connection, workflow_id: str, *, expected_version: int,
           who: str, note: str | None = None) -> int:
    """A person cancels the workflow as they saw it at ``expected_version``;
    the new version. A final state cannot be cancelled (chapter 08)."""
    check_move(PENDING, expected_version, CANCELLED, who, note)
    with immediate(conn):
        seen = read(conn, workflow_id)
        if seen["version"] != expected_version:
            raise TransitionRefused(STALE_VERSION, current(seen))
        return move(conn, workflow_id, seen["state"], expected_version, CANCELLED,
                    who, note or "cancelled")


def history(conn: sqlite3.Connection, workflow_id: str) -> list[dict]:
    """Every transition of the workflow, oldest first (chapter 08)."""
    return [dict(row) for row in conn.execute(
        "SELECT * FROM workflow_history WHERE workflow_id = :id ORDER BY version",
        {"id": workflow_id})]


def check_move(expected_state, expected_version, to_state, who, note) -> None:
    """The door checks of every move, made before any transaction (ch. 08)."""
    for name, state in (("expected_state", expected_state), ("to_state", to_state)):
        if state not in STATES:
            raise ValueError(f"{name} must be one of {STATES}, got {state!r}")
    check_count("expected_version", expected_version)
    check_text("who", who)
    if note is not None:
        check_text("note", note)


def move(conn: sqlite3.Connection, workflow_id: str, expected_state: str,
         expected_version: int, to_state: str, who: str, note: str | None) -> int:
    """Inside the caller's open transaction: the compare-and-set and its
    history row; the new version (chapter 08)."""
    found = current(read(conn, workflow_id))
    if (expected_state, to_state) not in MOVES:
        raise TransitionRefused(ILLEGAL_MOVE, found)
    moved = conn.execute(
        "UPDATE workflows SET state = :to_state, version = version + 1"
        " WHERE id = :id"
        "   AND state = :expected_state"  # nobody moved it since the caller read
        "   AND version = :expected_version",
        {"to_state": to_state, "id": workflow_id, "expected_state": expected_state,
         "expected_version": expected_version}).rowcount
    if moved != 1:
        raise TransitionRefused(STALE_VERSION, found)
    write_history(conn, workflow_id, expected_version + 1, expected_state,
                  to_state, who, note)
    return expected_version + 1


def current(workflow: dict) -> dict:
    """Just the {state, version} of a ``read`` (chapter 08)."""
    return {"state": workflow["state"], "version": workflow["version"]}


def write_history(conn, workflow_id, version, from_state, to_state, who,
                  note) -> None:
    """The history row of one transition, in the caller's transaction (ch. 08)."""
    conn.execute(
        "INSERT INTO workflow_history (workflow_id, version, from_state, to_state,"
        " who, at, note) VALUES (:id, :version, :from_state, :to_state, :who,"
        " :at, :note)",
        {"id": workflow_id, "version": version, "from_state": from_state,
         "to_state": to_state, "who": who, "at": clock(), "note": note})
