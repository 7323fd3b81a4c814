"""The steps of a workflow and what became of their effects (chapter 08).

A step (``advance_step``) is one remote call between two version-checked
transitions of ``crashcourse.workflow``, each with its row here:
``attempt_step`` BEFORE the call (of two workers holding one version, only
one gets past it) and ``record_outcome`` AFTER it, whose ``happened`` says
whether the effect exists. An attempt without an outcome is ``in_doubt``.

An attempt is HELD, not only versioned. Its row carries a lease (``expires``,
on the store's clock), and the call may leave only through ``admit``: in its
own transaction, the workflow is still at the attempt's version (nobody moved
it: no recovery, no cancel) AND the call's declared wait fits in what is left
of the lease. The admission is stamped on the attempt row (``admitted_at``).
A holder paused anywhere before ``admit`` is refused there and calls nothing.
The RESIDUAL WINDOW is the interval from ``admit``'s commit to the service's
own commit of the call (boundary ``admitted:<step>`` is in it; for the mail
provider and the payment service that commit is a SQLite transaction inside
this process): a holder paused anywhere in it can still act late, for as
long as the pause lasts, and only a service that takes the key or the token
refuses it.

Recovery never touches a step in doubt while its attempt's lease is live
(``AttemptHeld``): a lease that ran out lets another holder begin; it says
nothing about whether the first one is still running (chapter 05). After the
lease, the probe asks the service by the step's operation key before
anything is called again. A holder refused at its
admission or at its outcome hands its lease back (``release_lease``).

A cancelled workflow gets at most ONE ``compensations`` row per attempted
step (``compensate``): undone, needs a person, cannot be undone, or nothing
to undo. The cancel reaches a service that takes the token (``Remote.fence``)
before any probe; a step admitted by a holder that may still act, at a
service that takes no token, stays in doubt until a probe finds its effect.
``final_report`` reads it all back from rows.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import namedtuple

from crashcourse import store, workflow
from crashcourse.boundary import boundary
from crashcourse.store import (
    check_backend,
    ensure_schema,
    immediate,
    sql_list,
    table_rows,
)
from crashcourse.store.dialect import POSTGRES, SQLITE
from crashcourse.validate import canonical, check_text, clock

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["RUNS_ON", "COMPENSATIONS", "LEASE_TOO_SHORT", "LEASE_S", "WAIT_S",
    "SCHEMA", "TABLES", "Remote", "AttemptHeld", "AdmissionRefused", "install",
    "attempt_step", "record_outcome", "step_move", "admit", "release_lease",
    "advance_step", "call_step", "attempt_at", "progress", "holder", "step_of",
    "check_seconds", "record_compensation", "compensate", "settle_step",
    "final_report", "snapshot", "CANNOT_UNDO", "DONE", "IN_DOUBT", "NEEDS_PERSON",
    "NOTHING_TO_UNDO", "NOT_DONE", "NOT_STARTED", "UNDONE"]

# The databases install() accepts (store.check_backend): a store on any other
# is refused before anything is written.
RUNS_ON = (SQLITE, POSTGRES)

ATTEMPT, OUTCOME = "attempt", "outcome"  # the two rows of a step
# How a step stands, from its last row (``progress``).
NOT_STARTED, IN_DOUBT, DONE, NOT_DONE = "not_started", "in_doubt", "done", "not_done"
# What became of an attempted step's effect once the workflow stopped.
UNDONE, NEEDS_PERSON = "undone", "needs_person"
CANNOT_UNDO, NOTHING_TO_UNDO = "cannot_undo", "nothing_to_undo"
COMPENSATIONS = (UNDONE, NEEDS_PERSON, CANNOT_UNDO, NOTHING_TO_UNDO)
LEASE_TOO_SHORT = "lease_too_short"  # admit: the declared wait would outlive it
LEASE_S = 5.0  # an attempt's lease: its call's wait, and time to reach ``admit``
WAIT_S = 2.0  # a call's declared wait unless its ``Remote`` says otherwise

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS workflow_steps (
    workflow_id   TEXT NOT NULL,
    version       INTEGER NOT NULL,  -- the transition that wrote this row
    step          TEXT NOT NULL,
    operation_key TEXT NOT NULL,
    phase         TEXT NOT NULL CHECK (phase IN {sql_list((ATTEMPT, OUTCOME))}),
    outcome       TEXT,              -- JSON with "happened", NULL: an attempt
    expires       REAL,              -- an attempt's lease, on the store's clock
    admitted_at   REAL,              -- when ``admit`` let its call out, if ever
    PRIMARY KEY (workflow_id, version),
    FOREIGN KEY (workflow_id, version) REFERENCES workflow_history,
    CHECK ((phase = '{ATTEMPT}') = (expires IS NOT NULL))  -- attempts are held
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
# Each table in its key's order: the same rows in the same order on SQLite
# and on a server (which has no rowid to give the order they were written in).
TABLES = {"workflows": ("id",), "workflow_history": ("workflow_id", "version"),
          "workflow_steps": ("workflow_id", "version"),
          "compensations": ("workflow_id", "step")}


class Remote(namedtuple("_RemoteFields", "call probe undo wait_s fence",
                        defaults=(WAIT_S, None))):
    """How one step reaches its service, and asks it, and undoes it (ch. 08).

    ``call(args, operation_key, token) -> (to_state, outcome)``: make the
    remote call; ``token`` is the fencing token (workflow id, version).
    ``probe(args, operation_key) -> (happened, seen)``: ask the service;
    ``seen["copies"]``, where the service can count them, is how many
    effects carry the key. ``undo(args, operation_key, token) -> (action,
    status, compensation_key, note)``: what to do about the effect once the
    workflow is cancelled. ``wait_s``: the longest the call may take once
    admitted (its timeouts), which ``admit`` fits into the attempt's lease.
    ``fence(token)``, for a service that takes the token (None: it takes
    none): raise the workflow's fence there to ``token``'s version, so that
    from its commit on the service refuses every call of a lower version;
    it returns only once the service confirmed it, else raises (``OSError``
    when that is not known): ``compensate`` asks nothing before it returns.
    """

    __slots__ = ()


class AttemptHeld(Exception):
    """A step in doubt whose attempt's lease is live: its holder may still
    make the call, so nobody probes or calls yet (chapter 08). ``step``,
    ``version`` (the attempt's), ``who`` made it, ``left_s`` of its lease."""

    def __init__(self, step: str, version: int, who: str, left_s: float):
        super().__init__(f"step {step!r} is held by {who}'s attempt at version"
                         f" {version} for {left_s:.1f} s more")
        self.step, self.version, self.who, self.left_s = step, version, who, left_s


class AdmissionRefused(workflow.TransitionRefused):
    """A call ``admit`` did not let out: ``reason`` is ``stale_version``
    (somebody moved the workflow since the attempt) or ``lease_too_short``
    (the declared wait does not fit in the lease) (chapter 08)."""


def install(conn: sqlite3.Connection) -> None:
    """Create the workflow tables, the steps and the compensations (ch. 08)."""
    check_backend(conn, RUNS_ON, __name__)
    workflow.install(conn)
    ensure_schema(conn, SCHEMA)


def attempt_step(conn: sqlite3.Connection, workflow_id: str, step: str, *,
                 expected_version: int, who: str, lease_s: float = LEASE_S,
                 now: float | None = None) -> int:
    """running -> running with the step's ATTEMPT row, BEFORE its remote call,
    held for ``lease_s`` from now by the store's clock; the new version,
    which the call carries as its fencing token (ch. 08)."""
    check_seconds("lease_s", lease_s)
    return step_move(conn, workflow_id, step, None, expected_version, who,
                     workflow.RUNNING, lease_s, now)


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
              to_state, lease_s=None, now=None) -> int:
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
            " phase, outcome, expires) VALUES (:id, :version, :step, :key, :phase,"
            " :outcome, :expires)",
            {"id": workflow_id, "version": version, "step": step, "phase": phase,
             "key": status["operation_key"],
             "outcome": None if outcome is None else canonical(outcome),
             "expires": None if outcome is not None
             else store.now(conn, now) + lease_s})
    return version


def admit(conn: sqlite3.Connection, workflow_id: str, step: str, *, version: int,
          wait_s: float, now: float | None = None) -> float:
    """Let the call of the attempt at ``version`` leave the process, or raise
    ``AdmissionRefused``; the instant it was admitted (chapter 08).

    One transaction, right before the call: the workflow is still running at
    ``version`` (nobody moved it since the attempt: not a recovery, not a
    cancel) and ``wait_s``, the call's declared wait, fits in what is left of
    the attempt's lease by the store's clock. The admission is stamped on
    the attempt row. From this commit to the service's own commit of the
    call is the residual window, an interval: no check of ours can see a
    pause anywhere in it."""
    check_seconds("wait_s", wait_s)
    with immediate(conn):
        found = workflow.current(workflow.read(conn, workflow_id))
        if found != {"state": workflow.RUNNING, "version": version}:
            raise AdmissionRefused(workflow.STALE_VERSION, found)
        held = attempt_at(conn, workflow_id, version)
        if held is None or held["step"] != step:
            raise ValueError(f"version {version} is no attempt at {step!r}")
        at = store.now(conn, now)  # after the write lock: a wait for it counts
        if not wait_s < held["expires"] - at:  # the lease's clock, not ours
            raise AdmissionRefused(LEASE_TOO_SHORT, found)
        conn.execute("UPDATE workflow_steps SET admitted_at = :at"
                     " WHERE workflow_id = :id AND version = :version",
                     {"at": at, "id": workflow_id, "version": version})
    return at


def release_lease(conn: sqlite3.Connection, workflow_id: str, version: int, *,
                  now: float | None = None) -> bool:
    """The holder of the attempt at ``version`` will make no call for it any
    more (it was refused, or its call returned): its lease ends now, so
    nobody waits for it. Whether a live lease was ended (chapter 08)."""
    with immediate(conn):
        at = store.now(conn, now)
        return conn.execute(
            "UPDATE workflow_steps SET expires = :at"
            " WHERE workflow_id = :id"
            "   AND version = :version"
            f"  AND phase = '{ATTEMPT}'"
            "   AND expires > :at",  # a lease already over stays as it was
            {"at": at, "id": workflow_id, "version": version}).rowcount == 1


def advance_step(conn: sqlite3.Connection, workflow_id: str, step: dict,
             remote: Remote, *, version: int, who: str, lease_s: float = LEASE_S,
             now: float | None = None) -> tuple[str, int]:
    """One step of ``progress`` that is not done; the (state, version) it
    left (chapter 08). In doubt: ``AttemptHeld`` while the attempt's lease is
    live, then the probe. Not found, or not started: attempt, then
    ``call_step``. A refused write raises ``workflow.TransitionRefused``."""
    name, args, key = step["step"], step["args"], step["operation_key"]
    if step["status"] == IN_DOUBT:  # the call may have happened, or may yet
        held = holder(step["attempts"])
        left = held["expires"] - store.now(conn, now)
        if left > 0:  # its holder may be paused, not dead: no probe, no call
            found = workflow.current(workflow.read(conn, workflow_id))
            if found["version"] != version:  # we are behind anyway
                raise workflow.TransitionRefused(workflow.STALE_VERSION, found)
            raise AttemptHeld(name, held["version"], held["who"], left)
        happened, seen = remote.probe(args, key)
        if happened:
            return workflow.RUNNING, record_outcome(
                conn, workflow_id, name, {"happened": True, "probed": seen},
                expected_version=version, who=who)
    version = attempt_step(conn, workflow_id, name, expected_version=version,
                           who=who, lease_s=lease_s, now=now)
    boundary(f"before_remote:{name}")
    return call_step(conn, workflow_id, step, remote, version=version, who=who,
                     now=now)


def call_step(conn: sqlite3.Connection, workflow_id: str, step: dict,
              remote: Remote, *, version: int, who: str,
              now: float | None = None) -> tuple[str, int]:
    """The call of the attempt at ``version``: admitted, made, recorded; the
    (state, version) it left. Refused at the admission or at the outcome,
    the holder hands its lease back and raises (chapter 08).

    Boundaries: ``before_remote:<step>`` (in ``advance_step``: attempted, not yet
    admitted), ``admitted:<step>`` (the residual window) and
    ``after_remote:<step>`` (called, outcome not written)."""
    name, args, key = step["step"], step["args"], step["operation_key"]
    try:
        admit(conn, workflow_id, name, version=version, wait_s=remote.wait_s,
              now=now)
    except AdmissionRefused:
        release_lease(conn, workflow_id, version, now=now)  # no call, none later
        raise
    boundary(f"admitted:{name}")  # the residual window: nothing checks a pause here
    to_state, outcome = remote.call(args, key, (workflow_id, version))
    boundary(f"after_remote:{name}")
    try:
        return to_state, record_outcome(conn, workflow_id, name, outcome,
                                        expected_version=version, who=who,
                                        to_state=to_state)
    except workflow.TransitionRefused:
        release_lease(conn, workflow_id, version, now=now)  # its call returned
        raise


def attempt_at(conn: sqlite3.Connection, workflow_id: str, version: int
               ) -> dict | None:
    """The attempt row written at ``version``, with its ``who``; or None."""
    row = conn.execute(
        "SELECT s.step, s.version, s.expires, s.admitted_at, h.who"
        " FROM workflow_steps AS s JOIN workflow_history AS h"
        "   USING (workflow_id, version)"
        " WHERE s.workflow_id = :id"
        "   AND s.version = :version"
        f"  AND s.phase = '{ATTEMPT}'",
        {"id": workflow_id, "version": version}).fetchone()
    return dict(row) if row else None


def progress(conn: sqlite3.Connection, workflow_id: str) -> list[dict]:
    """Each recorded step, in order: ``step``, ``args``, ``operation_key``,
    ``status`` from its last row (not_started, in_doubt, done, not_done: a
    refusal, which may be attempted again), the last ``outcome``, the
    ``attempts`` since that outcome ({version, who, expires, admitted_at};
    only a step in doubt has any) and its ``compensation`` row or None
    (chapter 08)."""
    chosen = workflow.read(conn, workflow_id)["choices"]
    last, attempts = {}, {}
    for row in conn.execute(
            "SELECT s.step, s.outcome, s.phase, s.version, s.expires,"
            " s.admitted_at, h.who FROM workflow_steps AS s"
            " JOIN workflow_history AS h USING (workflow_id, version)"
            " WHERE s.workflow_id = :id ORDER BY s.version", {"id": workflow_id}):
        last[row["step"]] = row["outcome"]
        since = attempts.setdefault(row["step"], [])
        if row["phase"] == OUTCOME:
            since.clear()  # settled: earlier attempts hold nothing any more
        else:
            since.append({name: row[name] for name in (
                "version", "who", "expires", "admitted_at")})
    made = {row["step"]: dict(row) for row in conn.execute(
        "SELECT * FROM compensations WHERE workflow_id = :id", {"id": workflow_id})}
    steps = []
    for choice in chosen:
        name = choice["step"]
        outcome = json.loads(last[name]) if last.get(name) else None
        status = (NOT_STARTED if name not in last else IN_DOUBT if outcome is None
                  else DONE if outcome["happened"] else NOT_DONE)
        steps.append({**choice, "status": status, "outcome": outcome,
                      "attempts": attempts.get(name, []),
                      "compensation": made.get(name)})
    return steps


def holder(attempts: list[dict]) -> dict | None:
    """Of a step's ``attempts``, the one whose lease ends last (chapter 08)."""
    return max(attempts, key=lambda held: held["expires"], default=None)


def step_of(conn: sqlite3.Connection, workflow_id: str, step: str) -> dict:
    """One step of ``progress``; ValueError if the workflow has no such step."""
    found = [row for row in progress(conn, workflow_id) if row["step"] == step]
    if not found:
        raise ValueError(f"workflow {workflow_id!r} has no step {step!r}")
    return found[0]


def check_seconds(name: str, value: object) -> float:
    """A duration: a finite number of seconds above 0, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number of seconds > 0,"
                         f" got {value!r}")
    return float(value)


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
               who: str, now: float | None = None) -> dict:
    """Settle every attempted step of a cancelled (or failed) workflow once;
    returns ``final_report`` (chapter 08). An effect that exists gets its
    ``undo``. A step in doubt gets a row only once no earlier holder can
    still make its call land (``settle_step``):

    * its attempt was never admitted: the workflow has since moved to a
      final state, so ``admit`` can never let that call out: nothing to undo;
    * admitted, at a service that takes the token: the cancel reaches it
      first (``Remote.fence``, raised to the workflow's version now); from
      the fence's commit on no call of an earlier version can land there,
      so the probe made after it decides, lease or no lease;
    * admitted, at a service that takes no token (the mail provider, the
      payment service): a holder paused after its admission may still act,
      for as long as the pause lasts, and no lease bounds that. Its probe is
      made once the lease is over; if it finds the effect, the effect is
      undone; if not, the step stays IN DOUBT with no row (a compensation
      row is written once, so "nothing to undo" would be a permanent guess).
      Run ``compensate`` again later: a late effect that landed is found by
      that probe and settled then. A person who knows the holder is gone may
      write the row (``record_compensation``).

    So every row is true for good: nothing the report calls not done can
    happen later, and what may still happen is in doubt. A fence that is not
    confirmed raises (``OSError``) before that step is asked or written."""
    seen = workflow.read(conn, workflow_id)
    if seen["state"] not in (workflow.CANCELLED, workflow.FAILED):
        raise ValueError(f"workflow {workflow_id!r} is {seen['state']}: "
                         "only a cancelled or failed one is compensated")
    token = (workflow_id, seen["version"])
    at = store.now(conn, now)  # the leases' clock
    for step in progress(conn, workflow_id):
        if step["compensation"] or step["status"] in (NOT_STARTED, NOT_DONE):
            continue  # settled already, or no effect was ever attempted
        settled = settle_step(step, remotes[step["step"]], token, at)
        if settled is None:
            continue  # an earlier holder may still act: in doubt
        action, status, undo_key, note = settled
        record_compensation(conn, workflow_id, step["step"], action=action,
                            status=status, note=note, who=who,
                            compensation_key=undo_key)
    return final_report(conn, workflow_id)


def settle_step(step: dict, remote: Remote, token: tuple, at: float):
    """``compensate``'s rule for one attempted step, judged at ``at`` on the
    leases' clock with the cancel's ``token``: (action, status, compensation
    key, note), or None while it must stay in doubt (chapter 08)."""
    args, key = step["args"], step["operation_key"]
    if step["status"] == DONE:
        return remote.undo(args, key, token)
    admitted = holder([a for a in step["attempts"] if a["admitted_at"] is not None])
    if admitted is None:
        return ("none", NOTHING_TO_UNDO, None,
                "never admitted: the workflow moved on before its call could leave")
    if remote.fence is not None:
        remote.fence(token)  # confirmed, or it raises: the probe comes after
        if remote.probe(args, key)[0]:
            return remote.undo(args, key, token)
        return ("none", NOTHING_TO_UNDO, None,
                "fenced at the service, then not found: no earlier call can land")
    if admitted["expires"] > at:
        return None  # may be in flight: not even asked while its lease is live
    if remote.probe(args, key)[0]:
        return remote.undo(args, key, token)
    return None  # its holder may still send: only a later probe can tell


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
    return {table: table_rows(conn, table, key) for table, key in TABLES.items()}
