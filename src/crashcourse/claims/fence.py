"""Fence every write: the current-holder check and the writes it guards (chapter 06).

``assert_current`` runs INSIDE the transaction of the write it protects, so no
other holder can take the work between the check and the commit. A refused
write leaves no row behind; the refusal itself is noted afterwards, in its
own transaction, in ``refusals`` (a best-effort audit trail the grader reads).
On a PostgreSQL store (chapter 10) fenced writes run side by side
(``immediate(conn, shared=True)``): the check locks the work row ``FOR
UPDATE`` (a claimer skips a row a fenced write holds) and reads the lease
clock, the database's, after that lock.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from crashcourse import claims, control, store
from crashcourse.boundary import STOP_AT_ENV, boundary
from crashcourse.claims import BLOCKED, CANCELLED, DONE, RUNNING, Claim
from crashcourse.store import check_backend, dialect, ensure_schema, immediate
from crashcourse.store.dialect import POSTGRES, SQLITE
from crashcourse.validate import check_text

# The databases install() accepts (store.check_backend): a store on any other
# is refused before anything is written.
RUNS_ON = (SQLITE, POSTGRES)

# {identity_key}: a key the database numbers (crashcourse.store.dialect)
SCHEMA = """
CREATE TABLE IF NOT EXISTS transcript (
    seq        {identity_key},
    work_id    TEXT NOT NULL REFERENCES work (id),
    generation INTEGER NOT NULL,          -- which claim produced the message
    message    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS refusals (
    seq        {identity_key},
    work_id    TEXT NOT NULL,
    generation INTEGER NOT NULL,
    owner      TEXT NOT NULL,
    action     TEXT NOT NULL,
    reason     TEXT NOT NULL,
    at         DOUBLE PRECISION NOT NULL
)
"""

TERMINAL = (DONE, BLOCKED, CANCELLED)
MAX_RETRY_DELAY = 60.0
OPERATOR = "operator"  # the owner a cancel leaves on the row: nobody's claim


class StaleClaim(PermissionError):
    """A write offered by a holder that is no longer current (chapter 06)."""

    def __init__(self, reason: str, claim: Claim):
        super().__init__(f"{claim.id} generation {claim.generation}: {reason}")
        self.reason, self.claim = reason, claim


def install(conn: sqlite3.Connection) -> None:
    """Create the claims tables plus transcript and refusals (chapter 06)."""
    check_backend(conn, RUNS_ON, __name__)
    claims.install(conn)
    ensure_schema(conn, SCHEMA.format(identity_key=dialect(conn).identity_key))


def stale_reason(row, control, claim: Claim, now: float) -> str | None:
    """Why ``claim`` may not write now, or None if it is the current holder.

    Introduced in chapter 06."""
    checks = (
        (control["paused"], "paused"),
        (control["epoch"] != claim.epoch, "authority epoch replaced"),
        (row is None, "no such work"),
        (row is not None
         and any(row[f] != getattr(claim, f) for f in claims.ASSIGNMENT),
         "assignment fields differ"),
        (row is not None and row["generation"] != claim.generation, "superseded"),
        (row is not None and row["owner"] != claim.owner, "another owner"),
        (row is not None and row["status"] != RUNNING, "not running"),
        (row is not None and not (row["expires"] or 0) > now, "lease expired"),
    )
    return next((reason for failed, reason in checks if failed), None)


# The fence's one read: the work row with the runtime's switches (the pause
# flag and the authority epoch). On a server it locks the work row alone
# (``lock_row``), never the switches' row every fenced write reads.
HOLDER = ("SELECT work.*, runtime_control.paused, runtime_control.epoch"
          " FROM work LEFT JOIN runtime_control ON runtime_control.id = 1"
          " WHERE work.id = :id")


def assert_current(conn: sqlite3.Connection, claim: Claim,
                   now: float | None = None, *, record: bool = False) -> tuple:
    """Raise ``StaleClaim`` unless ``claim`` is the live claim (chapter 06);
    what it read (the work row with ``paused`` and ``epoch``) and the instant
    it judged at, by the lease clock (``store.now``), read after the row's lock.

    ``record=True`` for a write that records what already happened (an
    outcome, a probe's answer, a lease given back, chapter 07): the pause flag
    is set aside, every other check holds. Call it inside the write's own
    ``immediate`` block; alone it is one read that writes nothing."""
    read = conn.execute(HOLDER + dialect(conn).lock_row,
                        {"id": claim.id}).fetchone()
    at = store.now(conn, now)  # after the row's lock: a wait for it counts
    switches = read if read is not None else control.runtime(conn)
    if record:  # a stop keeps new effects out, not the record of one taken
        switches = {"paused": 0, "epoch": switches["epoch"]}
    reason = stale_reason(read, switches, claim, at)
    if reason is not None:
        raise StaleClaim(reason, claim)
    return read, at


def inside(name: str) -> None:
    """A boundary inside a write transaction, ``fenced:<action>``, where a
    harness may hold (and freeze) a holder with the write lock taken (issue
    29); only a process asked to stop there announces it, so in-process
    observers of the named boundaries hear the same list as before."""
    if os.environ.get(STOP_AT_ENV) == name:
        boundary(name)


def lease_held_at_commit(conn, claim: Claim, lease_end: float,
                         now: float | None = None) -> None:
    """The fence's second check, the write's last statement before its
    COMMIT (issue 29): ``StaleClaim("lease expired at commit")`` unless the
    lease (``lease_end``, as the write's first check read it, or later, as a
    renewal in the same transaction wrote it) is still running by the lease
    clock now. A holder paused INSIDE the transaction, past its lease, holds
    the write lock while paused (SQLite's one writer: every other writer, a
    replacement's claim and the operator's cancel too, waits for it), but
    when it runs again its write rolls back instead of committing late. What
    no check closes: a pause between this read of the clock and the COMMIT."""
    renewed = conn.execute(
        "SELECT expires FROM claims WHERE work_id = :id AND generation = :generation",
        {"id": claim.id, "generation": claim.generation}).fetchone()
    end = max(lease_end or 0.0, (renewed[0] or 0.0) if renewed is not None else 0.0)
    if not end > store.now(conn, now):
        raise StaleClaim("lease expired at commit", claim)


def record_refusal(
    conn: sqlite3.Connection, claim: Claim, action: str, reason: str
) -> bool:
    """Note a refused write in ``refusals``, best effort; whether it was written.

    The row is written after the refused write rolled back, in a transaction of
    its own. A crash, or a database still busy after its timeout, between the
    two loses the row; the refusal itself never depends on it: the write was
    already undone and ``StaleClaim`` is raised either way (chapter 06)."""
    try:
        with immediate(conn):
            conn.execute(
                "INSERT INTO refusals (work_id, generation, owner, action, reason,"
                " at) VALUES (:work_id, :generation, :owner, :action, :reason, :at)",
                {"work_id": claim.id, "generation": claim.generation,
                 "owner": claim.owner, "action": action, "reason": reason,
                 "at": store.now(conn)},
            )
    except sqlite3.OperationalError as busy:
        if not store.lock_waited_out(busy):
            raise  # a real fault, not a wait that ran out
        return False
    return True


@contextmanager
def fenced(conn: sqlite3.Connection, claim: Claim, action: str,
           now: float | None = None, *, record: bool = False) -> Iterator[tuple]:
    """One write transaction that starts with ``assert_current`` and yields
    what it read and when (chapter 06); ``record=True`` for a record of the
    past, which the pause flag alone does not refuse (chapter 07). On a
    server it holds the store's lock SHARED: fenced writes of other work go
    on meanwhile; an operator's writes (cancel, pause) still wait. The
    block's last act is ``lease_held_at_commit``: a lease that ran out while
    the block ran (a holder paused in it, boundary ``fenced:<action>``)
    commits nothing. A refusal is noted in ``refusals``, then raised."""
    try:
        with immediate(conn, shared=True):
            read, at = assert_current(conn, claim, now, record=record)
            inside(f"fenced:{action}")
            yield read, at
            lease_held_at_commit(conn, claim, read["expires"], now)
    except StaleClaim as refused:
        record_refusal(conn, claim, action, refused.reason)
        raise


def observe(
    conn: sqlite3.Connection, claim: Claim, message: dict, now: float | None = None
) -> int:
    """Append a transcript row stamped with its generation (chapter 06)."""
    if not isinstance(message, dict):  # a transcript reads back dicts only
        raise TypeError(f"message must be a dict, got {type(message).__name__}")
    text = json.dumps(message, sort_keys=True, allow_nan=False)
    with fenced(conn, claim, "observe", now):
        return conn.execute(
            "INSERT INTO transcript (work_id, generation, message)"
            " VALUES (:work_id, :generation, :message) RETURNING seq",
            {"work_id": claim.id, "generation": claim.generation, "message": text},
        ).fetchone()[0]


def retry_delay(generation: int) -> float:
    """Bounded exponential back-off for BLOCKED work: 2, 4, ... 60 s (chapter 06)."""
    if isinstance(generation, bool) or not isinstance(generation, int):
        raise TypeError(f"generation must be an int, got {generation!r}")
    return min(MAX_RETRY_DELAY, 2.0 ** min(generation, 6))


def finish(
    conn: sqlite3.Connection, claim: Claim, status: str, outcome: str,
    now: float | None = None,
) -> None:
    """End the claim: DONE, BLOCKED (with a retry delay) or CANCELLED.

    ``outcome`` goes to the ``work.outcome`` column (chapter 06)."""
    if status not in TERMINAL:
        raise ValueError(f"status must be one of {TERMINAL}, got {status!r}")
    check_text("outcome", outcome, empty_ok=True)
    with fenced(conn, claim, "finish", now):
        at = store.now(conn, now)
        delay = retry_delay(claim.generation) if status == BLOCKED else 0.0
        conn.execute(
            "UPDATE work SET status = :status, outcome = :outcome, expires = NULL,"
            " finished = :at, available_after = :after WHERE id = :id",
            {"status": status, "outcome": outcome, "at": at, "after": at + delay,
             "id": claim.id},
        )


def cancel_locked(conn: sqlite3.Connection, work_id: str, now: float) -> int:
    """Inside an open transaction: CANCELLED, and a generation nobody holds.

    Introduced in chapter 06."""
    row = claims.work_row(conn, work_id)
    generation = row["generation"] + 1
    conn.execute(
        f"UPDATE work SET status = '{CANCELLED}', generation = :generation,"
        " owner = :owner, expires = NULL, finished = :now WHERE id = :id",
        {"generation": generation, "owner": OPERATOR, "now": now, "id": work_id},
    )
    return generation


def cancel(conn: sqlite3.Connection, work_id: str, now: float | None = None) -> int:
    """Operator cancel, in a transaction of its own; the cancel's generation.

    What holds from its commit on: an earlier claim is stale at its NEXT
    fenced write, which is refused. A write already under way is not
    reached: a holder paused inside a fenced write holds the lock this
    cancel needs, so the cancel waits for it (on SQLite it gives up after
    the busy timeout), and that write is judged at its own commit, before
    the cancel's (``lease_held_at_commit``). Nothing outside this database
    hears of it: ``orders.settle_cancelled`` fences the supplier (chapter 06)."""
    with immediate(conn):
        return cancel_locked(conn, work_id, store.now(conn, now))


def transcript(conn: sqlite3.Connection, work_id: str) -> list[dict]:
    """The transcript of ``work_id`` in order, messages decoded (chapter 06)."""
    rows = conn.execute(
        "SELECT generation, message FROM transcript WHERE work_id = :id ORDER BY seq",
        {"id": work_id},
    ).fetchall()
    return [{"generation": r["generation"], **json.loads(r["message"])} for r in rows]


# --- the journal's holder (chapter 07, issue 19) ----------------------------------


def install_refusals(conn: sqlite3.Connection) -> None:
    """The claims tables and ``refusals`` alone, without ``transcript``: for a
    store whose writes are fenced but which keeps no transcript (the
    journal's file, chapter 07)."""
    claims.install(conn)
    ddl = SCHEMA.format(identity_key=dialect(conn).identity_key)
    ensure_schema(conn, next(part for part in ddl.split(";") if "refusals" in part))


def renew_locked(conn: sqlite3.Connection, claim: Claim, ttl: float,
                 now: float | None = None) -> float:
    """Inside a fenced write of ``claim``: its lease now ends ``ttl`` s from
    now, in the work row and in its own ``claims`` row, which is where a later
    holder reads when this generation's lease is over; the new end (chapter 07).

    A lease that already ran out is not extended (``StaleClaim``, issue 29):
    a holder paused inside the transaction past its lease must not wake and
    give itself a fresh one from the moment of the thaw."""
    ttl = claims.check_lease(claim.owner, ttl)
    at = store.now(conn, now)
    current = conn.execute(
        "SELECT expires FROM work WHERE id = :id AND generation = :generation",
        {"id": claim.id, "generation": claim.generation}).fetchone()
    if current is None or not (current[0] or 0.0) > at:
        raise StaleClaim("lease expired", claim)
    expires = at + ttl
    fields = {"id": claim.id, "generation": claim.generation, "expires": expires}
    conn.execute("UPDATE work SET expires = :expires"
                 " WHERE id = :id AND generation = :generation", fields)
    conn.execute("UPDATE claims SET expires = :expires"
                 " WHERE work_id = :id AND generation = :generation", fields)
    return expires


def release(conn: sqlite3.Connection, claim: Claim, *, done: bool,
            outcome: str = "", now: float | None = None) -> None:
    """Give the lease back, fenced as a record (a stop does not refuse it):
    DONE, or queued again for the next claim. Its ``claims`` row ends now, so
    nobody waits for a lease whose holder has finished (chapter 07)."""
    check_text("outcome", outcome, empty_ok=True)
    with fenced(conn, claim, "release", now, record=True):
        at = store.now(conn, now)
        conn.execute(
            "UPDATE work SET status = :status, outcome = :outcome, expires = NULL,"
            " finished = :finished WHERE id = :id",
            {"status": DONE if done else claims.READY, "outcome": outcome,
             "finished": at if done else None, "id": claim.id})
        conn.execute("UPDATE claims SET expires = :at WHERE work_id = :id"
                     " AND generation = :generation AND expires > :at",
                     {"at": at, "id": claim.id, "generation": claim.generation})
