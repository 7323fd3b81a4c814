"""Write the intent first: the journal, run under a claim (chapter 07).

A step's row is its INTENT (with what the probe saw before: ``before_state``,
and the ``generation`` of the claim that wrote it), committed before the step
acts, then its OUTCOME. A resumed run reads it:

* outcome recorded: skip the step;
* intent without outcome (the step in doubt): wait until the lease of the
  claim that wrote the intent is over by the store's clock (else
  ``HolderMayStillAct``), then ask the target through the step's probe.
  Found: record what the probe saw, ``resolved_by = 'probe'``. Not found:
  withdraw the intent and run the step again. "Not found" proves only that
  no request of that holder has landed by now; see ``settle``;
* no row: the probe is asked before the intent too, and a step the target
  already shows done (the journal lost its tail) is recorded the same way,
  never performed twice (issue 14).

ONE HOLDER AT A TIME. The proof that at most one step is in doubt assumes one
writer. So the journal runs under chapter 05's claim on its task
(``claim_task``: the task queued as work in the journal's own file), every
journal write is fenced (chapter 06: ``fence.fenced``, the check inside the
write's transaction), and an intent's commit renews the lease once a
quarter of it is spent, counted beyond the step's declared wait (``renews``). A
holder superseded or expired can write nothing more, and between its intent
and its request ``admit`` checks, in one read that writes nothing, that it
still holds the task and that the action's declared wait fits in what is
left of the lease (chapter 06's rule). What no check on this side closes is
the interval from ``admit`` to the target's commit (the boundary
``step-N:admitted``, then the service call itself): a holder paused anywhere
in it may send, or commit, late.

ONE COMMIT PER STEP. Only the intent must be committed before the action, and
nothing reads an outcome before the next step begins. So ``run_plan`` holds
step N's outcome (``Pending``) and commits it in ONE transaction with step
N+1's intent (and the lease's renewal, when due), after N+1's probe; the
last outcome of a run commits alone. Each commit writes the held outcome
before the new intent, so no committed state has two rows without an
outcome: at most ONE step is in doubt, and the partial unique index
``one_in_doubt`` would refuse a second. The admission takes no lock and
writes nothing. The price of one commit: the step just performed reads as
in doubt until the next intent commits.

WHAT A STEP COSTS (issue 24). In ``synchronous=FULL`` a step's one commit
waits for one sync of the journal's ``-wal``; the rest is CPU. So the hot
path reads the fence's two rows in one statement (``fence.assert_current``),
the admission is that one read, the lease's two rows are written about once per quarter
lease, and the table is kept in its key's order alone (``WITHOUT ROWID``):
a step's commit writes the journal's row and its two index entries, about
three pages.

A STOP. The pause flag (chapter 09) refuses new intents and admissions, not
the record of what already happened: an outcome, a probe's answer or a lease
given back is written while paused (``fence.fenced(..., record=True)``), so a
stop still ends a run with nothing in doubt.

``PHASES``, where a harness may kill step N, and what that leaves:

* ``before_intent`` (before N's probe and intent): N-1 in doubt, acted on;
  nothing in doubt if N is this process's first step or follows a probe's
  answer;
* ``after_intent``: N-1 confirmed, N in doubt, not acted on; the boundary
  ``step-N:admitted`` leaves the journal the same;
* ``after_action``: N acted on, still in doubt;
* ``after_outcome``: N's outcome held, not written: as at ``after_action``.

The reads (``confirmed_count``, ``journal_status``, ``entries``,
``resolutions``, ``probe_gate``) and the checks at the door are in
``journal.reads`` and answer here too. Chapter 09 adds ``should_stop``.
"""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple

from crashcourse import claims, control, store
from crashcourse.boundary import boundary
from crashcourse.claims import Claim, fence
from crashcourse.journal.plan import Plan, Step
from crashcourse.journal.reads import (  # noqa: F401  (journal.journal_status etc.)
    PROBE,
    RUN,
    JournalStatus,
    check_action,
    check_remaining,
    check_step,
    check_task,
    confirmed_count,
    entries,
    journal_status,
    probe_gate,
    resolutions,
    step_key,
    step_row,
)
from crashcourse.store import check_backend, dialect, ensure_schema
from crashcourse.store.dialect import POSTGRES, SQLITE
from crashcourse.validate import check_count
from crashcourse.waiting import wait_until

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["RUNS_ON", "PHASES", "ADMITTED", "SKIP", "STOPPED_BEFORE", "ROLE",
    "DEFAULT_WAIT_S", "CHECKPOINT_PAGES", "DEFAULT_TTL_S", "SCHEMA", "Action",
    "HolderMayStillAct", "TaskHeld", "TaskCancelled", "schema", "install",
    "task_origin", "task_work_id", "claim_task", "holder", "why_not_claimed",
    "lease_length", "check_claim", "lease_over", "wait_out", "cancel_task",
    "renews", "Pending", "admit", "settle", "run_step", "run_checked_step",
    "run_plan", "wal_wraps_early", "finished", "run_task", "decisions", "plan",
    "Plan", "Step", "PROBE", "RUN", "JournalStatus", "check_action",
    "check_remaining", "check_step", "check_task", "confirmed_count", "entries",
    "journal_status", "probe_gate", "resolutions", "step_key", "step_row"]

# The databases install() accepts (store.check_backend): a store on any other
# is refused before anything is written.
RUNS_ON = (SQLITE, POSTGRES)

PHASES = ("before_intent", "after_intent", "after_action", "after_outcome")
ADMITTED = "admitted"  # step-N:admitted: checked, the request not yet sent
SKIP = "skip"  # how run_step settled a step: SKIP, PROBE or RUN
STOPPED_BEFORE = "stopped_before"  # run_plan's result: the step a stop came before
ROLE = "journal"  # the role of a task's work row, beside chapter 05's "shop"
DEFAULT_WAIT_S = 1.0  # an action's declared wait, unless it declares its own
# In FULL, how many pages the journal's -wal takes before it is checkpointed
# and written again from its start (SQLite's default: 1,000; see run_plan).
CHECKPOINT_PAGES = 100
DEFAULT_TTL_S = 3.0  # a run's lease, renewed by its intents (``renews``)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS journal (
    task          TEXT NOT NULL,
    step          INTEGER NOT NULL,
    operation_key TEXT NOT NULL,         -- travels with the action (mail header),
                                         -- begins task/step: unique as they are
    action        TEXT NOT NULL,
    args          TEXT NOT NULL,
    before_state  TEXT NOT NULL,         -- what the probe saw: for an unwind
    outcome       TEXT,                  -- NULL: intent written, outcome not
    resolved_by   TEXT CHECK (resolved_by IN ('{RUN}', '{PROBE}')),
    generation    INTEGER,               -- the claim that wrote the row
    PRIMARY KEY (task, step)
){{without_rowid}};
-- at most one step of a task may be in doubt, whatever the code does
CREATE UNIQUE INDEX IF NOT EXISTS one_in_doubt ON journal (task)
    WHERE outcome IS NULL
"""
_dumps = json.JSONEncoder(sort_keys=True).encode  # json.dumps(x, sort_keys=True)


class Action(namedtuple("_ActionFields", "execute probe restore wait_s",
                        defaults=(None, DEFAULT_WAIT_S))):
    """How to perform one kind of step and how to ask if it happened (chapter 07).

    ``execute(args, operation_key) -> result``; ``probe(args, operation_key) ->
    (done, observed)``: did the target reach the step's end state, and what it
    shows. For a gate the probe is the check: (passed, observed).
    ``restore(args, before_state, operation_key) -> result`` puts the target
    back as ``before_state`` says, for an unwind (chapter 09); None: the action
    cannot be undone. ``wait_s``: the longest the action's request may take
    once it leaves, which must fit in what is left of the lease (``admit``).
    """

    __slots__ = ()


class HolderMayStillAct(PermissionError):
    """A step in doubt whose intent's claim still has its lease: its holder
    may act on it yet, so no probe may settle it before that lease is over
    by the store's clock (chapter 07)."""


class TaskHeld(RuntimeError):
    """Another holder's lease on the task is live: nothing was written
    (chapter 07)."""


class TaskCancelled(RuntimeError):
    """The task's work was cancelled (an unwind, chapter 09): it is never
    claimed again; nothing was written."""


def schema(conn: sqlite3.Connection) -> str:
    """The journal's table in ``conn``'s database: on SQLite a table kept in
    its primary key's order alone (``WITHOUT ROWID``), so a step's commit
    writes one tree fewer (issue 24). A file made before keeps its own."""
    return SCHEMA.format(without_rowid=dialect(conn).without_rowid)


def install(conn: sqlite3.Connection) -> None:
    """Create the journal table in ``conn``'s database, with the claims and
    refusals its fenced writes need (chapter 07)."""
    check_backend(conn, RUNS_ON, __name__)
    fence.install_refusals(conn)
    ensure_schema(conn, schema(conn))


# --- the task's claim (chapter 05's, on the journal's own file) -------------------


def task_origin(task: str) -> str:
    """Where a task's work row comes from: the task id, so one task is one
    piece of work however often it is queued (chapter 07)."""
    return f"journal:{check_task(task)}"


def task_work_id(task: str) -> str:
    """The id of the task's work row (``claims.work_id_for``) (chapter 07)."""
    return claims.work_id_for(task_origin(task))


def claim_task(conn: sqlite3.Connection, task: str, owner: str, *, ttl: float,
               now: float | None = None) -> Claim | None:
    """Queue the task as work (once) and claim it for ``ttl`` seconds; None
    while another lease is live, the pause flag is set, or the task is done
    or cancelled (``why_not_claimed`` says which). Chapter 07."""
    claims.check_lease(owner, ttl)
    work_id = claims.enqueue(conn, task_origin(task), session=task,
                             prompt=f"run the stored plan {task}", role=ROLE)
    return claims.claim(conn, owner, ttl=ttl, now=now, role=ROLE, work_id=work_id)


def holder(conn: sqlite3.Connection, task: str) -> dict | None:
    """The task's work row (status, owner, generation, expires), or None if
    it was never queued; a read (chapter 07)."""
    if not store.table_exists(conn, "work"):  # a read: never queued here
        return None
    row = conn.execute(
        "SELECT status, owner, generation, expires FROM work WHERE id = :id",
        {"id": task_work_id(task)}).fetchone()
    return None if row is None else dict(row)


def why_not_claimed(conn: sqlite3.Connection, task: str) -> str:
    """Why ``claim_task`` found nothing: "paused", "done", "cancelled", or
    "held" (a live lease); a read (chapter 07)."""
    if control.is_paused(conn):
        return "paused"
    row = holder(conn, task) or {}
    if row.get("status") in (claims.DONE, claims.CANCELLED):
        return "done" if row["status"] == claims.DONE else "cancelled"
    return "held"


def lease_length(conn: sqlite3.Connection, claim: Claim) -> float:
    """The lease ``claim`` was granted, in seconds: what each renewal gives
    again. Read from its ``claims`` row (chapter 07)."""
    row = conn.execute(
        "SELECT claimed_at FROM claims WHERE work_id = :id AND generation = :g",
        {"id": claim.id, "g": claim.generation}).fetchone()
    if row is None:
        raise fence.StaleClaim("no such claim", claim)
    return claim.expires - row["claimed_at"]


def check_claim(claim: object, task: str) -> Claim:
    """A ``Claim`` on this task's work row, or an error before anything is
    read or written (chapter 07)."""
    if not isinstance(claim, Claim):
        raise TypeError(f"a journal runs under a claims.Claim, got {claim!r}")
    if claim.id != task_work_id(task):
        raise ValueError(f"claim {claim.id} is not on task {task}'s work")
    return claim


def lease_over(conn: sqlite3.Connection, task: str, generation: int | None,
               now: float | None = None) -> tuple[bool, float | None]:
    """Whether the lease of the claim ``generation`` on the task is over by
    the store's clock, and when it ends. An intent with no generation (written
    outside any claim) waits for every lease on the task (chapter 07)."""
    at = store.now(conn, now)
    if generation is None:
        row = conn.execute("SELECT max(expires) AS expires FROM claims"
                           " WHERE work_id = :id", {"id": task_work_id(task)}
                           ).fetchone()
    else:
        row = conn.execute("SELECT expires FROM claims WHERE work_id = :id"
                           " AND generation = :g",
                           {"id": task_work_id(task), "g": generation}).fetchone()
    ends = None if row is None else row["expires"]
    return ends is None or ends <= at, ends  # no claims row: no lease recorded


def wait_out(conn: sqlite3.Connection, task: str, *, timeout: float = 60.0,
             now: float | None = None) -> None:
    """Wait until no lease on the task is live, for a person's decision
    (chapter 09): a lease that runs out unrenewed belongs to a holder that is
    no longer working (killed, or paused). ``TaskHeld`` at once if it is
    renewed meanwhile (someone is working the task), or after ``timeout`` s;
    with an injected clock, at once if it is live at ``now``."""
    seen = holder(conn, task)
    if seen is None or seen["status"] != claims.RUNNING:
        return

    def lease_ran_out() -> bool:
        over, ends = lease_over(conn, task, seen["generation"], now)
        if over:
            return True
        if now is not None:
            raise TaskHeld(f"task {task} is held by {seen['owner']} (generation"
                           f" {seen['generation']}) until {ends}")
        again = holder(conn, task)
        if (again["generation"], again["expires"]) != (seen["generation"],
                                                       seen["expires"]):
            raise TaskHeld(f"task {task}: its holder renewed its lease; it is at"
                           " work")
        return False

    try:
        wait_until(lease_ran_out, timeout, what=f"the lease on task {task} end")
    except TimeoutError:
        raise TaskHeld(f"task {task} is held by {seen['owner']} (generation"
                       f" {seen['generation']}) past {timeout} s") from None


def cancel_task(conn: sqlite3.Connection, task: str,
                now: float | None = None) -> int:
    """Cancel the task's work (queued first if it never was): no claim is
    granted on it again, and every earlier claim is stale at its next fenced
    write (``fence.cancel``; a holder paused inside a write is judged at its
    own commit); the new generation, which nobody holds (chapter 09's unwind)."""
    claims.enqueue(conn, task_origin(task), session=task,
                   prompt=f"run the stored plan {task}", role=ROLE)
    return fence.cancel(conn, task_work_id(task), now)


# --- the journal's writes, each fenced --------------------------------------------


def renews(left: float, ttl: float, wait_s: float) -> bool:
    """Whether an intent renews its lease of ``ttl`` s, of which ``left`` is
    left: when what is left beyond the step's declared wait (``wait_s``, the
    wait its admission must fit) is under three quarters of what a fresh
    lease leaves beyond it. So a step is admitted with at least that much
    room to spare, and a run writes the lease's two rows about once per
    quarter lease instead of in every step's commit (chapter 07)."""
    return left - wait_s < (ttl - wait_s) * 3 / 4


class Pending:
    """A step's outcome the worker holds and the journal does not yet: it
    commits in ONE transaction with the next step's intent (chapter 07).

    The UPDATE goes first, then the INSERT: the partial unique index is
    checked statement by statement, and so is never asked to hold two. The
    commit is fenced as a record (``fence.fenced``): the outcome is history and is
    written while paused; the new intent is not, and renews the lease."""

    __slots__ = ("conn", "task", "claim", "ttl", "now", "step", "outcome")

    def __init__(self, conn: sqlite3.Connection, task: str, claim: Claim, *,
                 now: float | None = None):
        self.conn, self.task = conn, check_task(task)
        self.claim, self.now = check_claim(claim, task), now
        self.ttl = lease_length(conn, claim)
        self.step = self.outcome = None

    def hold(self, step: int, result) -> None:
        """Keep step ``step``'s outcome until the next commit."""
        self.step, self.outcome = check_count("step", step), _dumps(result)

    def commit(self, intent: dict | None = None, wait_s: float = 0.0) -> bool:
        """The outcome held (if any) and ``intent`` (if any), in one commit;
        an intent may carry its outcome, found by the probe (``run_step``).
        False: the pause flag kept the intent out (the outcome went in).

        The intent renews the lease to its full length when ``renews`` says
        so (``wait_s``: the wait its admission must fit); otherwise the
        lease stands."""
        if self.step is None and intent is None:
            return True
        what = "outcome" if intent is None else "intent"  # for refusals
        with fence.fenced(self.conn, self.claim, what, self.now,
                         record=True) as (read, at):
            if self.step is not None:
                self.conn.execute(
                    f"UPDATE journal SET outcome = :outcome, resolved_by = '{RUN}'"
                    " WHERE task = :task AND step = :step AND outcome IS NULL",
                    {"task": self.task, "step": self.step, "outcome": self.outcome})
            written = intent is not None and not read["paused"]  # under the lock
            if written:
                self.conn.execute(
                    "INSERT INTO journal (task, step, operation_key, action, args,"
                    " before_state, outcome, resolved_by, generation) VALUES"
                    " (:task, :step, :operation_key, :action, :args, :before,"
                    " :outcome, :by, :generation)",
                    {"outcome": None, "by": None, **intent,
                     "generation": self.claim.generation})
                if renews(read["expires"] - at, self.ttl, wait_s):
                    fence.renew_locked(self.conn, self.claim, self.ttl, self.now)
        self.step = self.outcome = None
        return written or intent is None


def _withdraw(conn, claim: Claim, task: str, number: int, now=None) -> None:
    """Delete an intent whose action did not run: the probe found nothing
    once its holder could no longer act, or this holder stopped before acting.
    A record of the past, so a stop does not refuse it."""
    with fence.fenced(conn, claim, "withdraw", now, record=True):
        conn.execute("DELETE FROM journal WHERE task = :task AND step = :step"
                     " AND outcome IS NULL", {"task": task, "step": number})


def admit(conn: sqlite3.Connection, claim: Claim, task: str, step: Step,
          wait_s: float, now: float | None = None) -> bool:
    """The last check before step ``step``'s request leaves (chapter 07).

    One read, which writes nothing: ``claim`` still holds the task
    (``fence.StaleClaim`` if not, noted in ``refusals``), and ``wait_s`` fits
    in what is left of its lease (chapter 06's rule: ``orders.LeaseTooShort``
    if not), so no replacement may probe the step while this request can
    still be on its way. False: the pause flag is set; the intent is
    withdrawn and nothing is sent. A holder paused anywhere before this check
    is refused here; one paused after it, at ``step-N:admitted``, is not:
    that instant is what no check on this side can close."""
    what = f"admit step {step.number}"
    try:
        read, at = fence.assert_current(conn, claim, now, record=True)
    except fence.StaleClaim as refused:
        fence.record_refusal(conn, claim, what, refused.reason)
        raise
    if read["paused"]:  # a stop: this step never acted
        _withdraw(conn, claim, task, step.number, now)
        return False
    if not 0 < wait_s < read["expires"] - at:  # chapter 06's refusal
        from crashcourse.claims.orders import LeaseTooShort

        raise LeaseTooShort(f"step {step.number}: a {wait_s} s wait does not fit"
                            f" in the {read['expires'] - at:.3f} s left of the lease")
    return True


def settle(conn: sqlite3.Connection, task: str, step: Step, action: Action,
           claim: Claim, now: float | None = None) -> dict | None:
    """Settle the step in doubt through its probe: the observation if the
    effect is there (recorded, ``resolved_by = 'probe'``), None if not (the
    intent withdrawn: the step may run again). Chapter 07.

    The probe is asked only once the lease of the claim that wrote the intent
    is over by the store's clock (``HolderMayStillAct`` until then): a holder
    admitted under that lease sent within its declared wait, so its request
    has landed or never will. What "not found" then proves: no request of
    that holder reached the target by now, and no admission of it can come
    (it is fenced). What it cannot prove: that a holder frozen between its
    admission and its request (``step-N:admitted``) will not send later. A
    target that takes the step's operation key folds such a late request into
    the first; one that takes none (the mail provider) gets it twice, and
    only the key it carries (``X-Operation-Key``) lets it be found."""
    row = conn.execute("SELECT generation FROM journal WHERE task = :task"
                       " AND step = :step AND outcome IS NULL",
                       {"task": task, "step": step.number}).fetchone()
    over, ends = lease_over(conn, task, row["generation"], now)
    if not over:
        raise HolderMayStillAct(
            f"step {step.number} of {task} is in doubt under generation"
            f" {row['generation']}, whose lease runs until {ends}: that holder"
            " may still act on it, and a probe now could be overtaken")
    done, observed = action.probe(step.args, step_key(task, step))
    if not done:
        _withdraw(conn, claim, task, step.number, now)
        return None
    with fence.fenced(conn, claim, "settle", now, record=True):
        conn.execute(
            f"UPDATE journal SET outcome = :outcome, resolved_by = '{PROBE}'"
            " WHERE task = :task AND step = :step AND outcome IS NULL",
            {"task": task, "step": step.number, "outcome": _dumps(observed)},
        )
    return observed


def run_step(conn: sqlite3.Connection, task: str, step: Step, action: Action,
             claim: Claim, *, pending: Pending | None = None, should_stop=None,
             now: float | None = None) -> str:
    """Run one step through the journal under ``claim``; says how: skip,
    probe or run (chapter 07).

    On its own it commits its intent, is admitted, acts, and commits its
    outcome. In a run (``pending``, from ``run_plan``) the previous outcome
    commits with this intent, this step's outcome is left in ``pending`` for
    the next, and ``should_stop`` is asked after that commit: on True the
    intent is withdrawn, ``STOPPED_BEFORE`` (chapter 09), as when the pause flag is
    found set at the intent's commit or at the admission. A step the target
    already shows done before its intent (the journal lost its tail: chapter
    07's deleted ``-wal``) is recorded as the probe found it, ``PROBE``, and
    not performed again; a gate's probe is its check, so a gate still runs.
    ``now`` injects the store's clock for every lease check (tests)."""
    check_task(task)
    check_action(check_step(step), action)
    check_claim(claim, task)
    return run_checked_step(conn, task, step, action, claim, pending=pending,
                            should_stop=should_stop, now=now)


def run_checked_step(conn: sqlite3.Connection, task: str, step: Step,
                     action: Action, claim: Claim, *,
                     pending: Pending | None = None, should_stop=None,
                     now: float | None = None) -> str:
    """``run_step`` once its arguments are checked: ``run_plan`` checks every
    step it has left, and its claim, before its first write (chapter 07)."""
    held = pending is not None and pending.step is not None
    row = None if held else step_row(conn, task, step.number)  # held: no row yet
    if row is not None and row["outcome"] is not None:
        return SKIP
    if row is not None and settle(conn, task, step, action, claim, now) is not None:
        return PROBE
    name, key = f"step-{step.number}", step_key(task, step)
    alone = pending is None
    pending = pending or Pending(conn, task, claim, now=now)
    boundary(f"{name}:before_intent")
    done, before = action.probe(step.args, key)
    intent = {"task": task, "step": step.number, "operation_key": key,
              "action": step.action, "args": _dumps(step.args),
              "before": _dumps(before)}
    if done and not step.gate:  # already there: record it as found, never redo
        return PROBE if pending.commit({**intent, "outcome": intent["before"],
                                        "by": PROBE}) else STOPPED_BEFORE
    if not pending.commit(intent, action.wait_s):
        return STOPPED_BEFORE  # the pause flag, read under the intent's lock
    if should_stop is not None and should_stop():  # every earlier outcome is in
        _withdraw(conn, claim, task, step.number, now)
        return STOPPED_BEFORE
    boundary(f"{name}:after_intent")
    if not admit(conn, claim, task, step, action.wait_s, now):
        return STOPPED_BEFORE
    boundary(f"{name}:{ADMITTED}")  # what no check here closes: from here to the send
    result = action.execute(step.args, key)
    boundary(f"{name}:after_action")
    pending.hold(step.number, result)
    if alone:
        pending.commit()
    boundary(f"{name}:after_outcome")
    return RUN


def run_plan(conn: sqlite3.Connection, task: str, plan: Plan,
             actions: dict[str, Action], claim: Claim, *, should_stop=None,
             now: float | None = None) -> dict[str, int]:
    """Every step of ``plan`` in order, under ``claim`` (``claim_task``); how
    many were skipped, probed, run.

    Where to resume comes from the journal's last row alone, so it costs the
    same for a plan of 10 steps and one of 10,000 (chapter 07). Each outcome
    commits with the next intent, which renews the lease; the last one alone,
    however the run ends. A write refused by the fence raises
    ``fence.StaleClaim`` (another holder has the task, or the lease ran out):
    nothing more is sent, and what was not recorded stays in doubt for the
    next holder's probe. ``should_stop()`` is asked once per remaining step,
    before it acts and with every earlier outcome in the journal (chapter
    09); on True, or with the pause flag found set, the run ends with nothing
    in doubt, ``STOPPED_BEFORE``: N. Every step left is checked first
    (``check_remaining``): a bad one raises, nothing written.
    """
    if not isinstance(plan, Plan):
        raise TypeError(f"run_plan runs a plan.Plan, got {plan!r}")
    skipped, stop = confirmed_count(conn, task), should_stop or (lambda: False)
    remaining = plan.steps[skipped:]  # read once: a stored plan reads rows
    check_remaining(remaining, skipped + 1, actions)  # before any write
    check_claim(claim, task)
    ensure_schema(conn, schema(conn))
    wal_wraps_early(conn)
    done, pending = {SKIP: skipped, PROBE: 0, RUN: 0}, Pending(conn, task, claim,
                                                              now=now)
    try:
        for step in remaining:
            held = pending.step is not None  # the previous outcome, not written
            if not held and stop():
                done[STOPPED_BEFORE] = step.number
                break
            if step.gate:
                probe_gate(task, step, actions[step.action])
            how = run_checked_step(conn, task, step, actions[step.action], claim,
                                   pending=pending,
                                   should_stop=stop if held else None, now=now)
            if how == STOPPED_BEFORE:
                done[STOPPED_BEFORE] = step.number
                break
            done[how] += 1
    except fence.StaleClaim:
        raise  # no longer this holder's to write: the next one's probe settles it
    except BaseException:
        try:  # the last outcome, alone, if this holder may still write it
            pending.commit()
        except fence.StaleClaim:
            pass
        raise
    pending.commit()  # the last outcome, alone
    return done


def wal_wraps_early(conn: sqlite3.Connection) -> None:
    """On a SQLite file in ``synchronous=FULL`` (or EXTRA), checkpoint the
    journal's ``-wal`` every ``CHECKPOINT_PAGES`` pages, for this connection.

    Each step's commit waits for a sync of the ``-wal``. While the ``-wal``
    grows, that sync also commits the file's new size to the file system's
    own journal: a second write the disk must flush. A ``-wal`` is deleted
    when its file's last connection closes, so every worker process starts
    one afresh, and at SQLite's 1,000 pages (about 350 steps) most steps of
    a run would pay it. Checkpointed at 100, the ``-wal`` is written again
    from its start after about 35 steps, and its syncs flush data alone; a
    checkpoint costs about two syncs every 35 steps (issue 24). In NORMAL
    a commit syncs nothing and a checkpoint is the only sync: left alone."""
    if not dialect(conn).one_writer:
        return
    if conn.execute("PRAGMA synchronous").fetchone()[0] >= 2:  # FULL, EXTRA
        conn.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")


def finished(conn: sqlite3.Connection, task: str, plan: Plan) -> bool:
    """Whether every step of ``plan`` has its outcome; a read (chapter 07)."""
    return confirmed_count(conn, task) == len(plan.steps)


def run_task(conn: sqlite3.Connection, task: str, plan: Plan,
             actions: dict[str, Action], *, owner: str,
             ttl: float = DEFAULT_TTL_S, should_stop=None,
             now: float | None = None) -> dict[str, int]:
    """Claim the task, run the plan under the claim, give the lease back:
    DONE once every step is confirmed, else queued for the next claim; the
    counts of ``run_plan`` (chapter 07).

    Not claimed: the pause flag is set (the counts, ``STOPPED_BEFORE`` at the next
    step, nothing written), the plan is already finished (every step
    skipped), the task was cancelled (``TaskCancelled``), or another lease
    is live (``TaskHeld``). Whatever ends a run early, the lease is given
    back if this holder still holds it, so the next run need not wait it out;
    a killed holder's lease simply runs out."""
    claim = claim_task(conn, task, owner, ttl=ttl, now=now)
    if claim is None:
        why, skipped = why_not_claimed(conn, task), confirmed_count(conn, task)
        if why == "cancelled":
            raise TaskCancelled(f"task {task} was cancelled; it is not run again")
        if why == "held":
            seen = holder(conn, task)
            raise TaskHeld(f"task {task} is held by {seen['owner']} (generation"
                           f" {seen['generation']}) until {seen['expires']}")
        stopped = {} if why == "done" else {STOPPED_BEFORE: skipped + 1}
        return {SKIP: skipped, PROBE: 0, RUN: 0, **stopped}
    try:
        done = run_plan(conn, task, plan, actions, claim, should_stop=should_stop,
                        now=now)
    except BaseException:
        try:
            fence.release(conn, claim, done=False, now=now)
        except fence.StaleClaim:
            pass  # no longer this holder's to give back
        raise
    complete = STOPPED_BEFORE not in done and finished(conn, task, plan)
    try:
        fence.release(conn, claim, done=complete, now=now,
                      outcome="plan finished" if complete else "")
    except fence.StaleClaim:
        pass  # every outcome is in; the lease runs out on its own
    return done
