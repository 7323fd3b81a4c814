"""The operator's stop against a holder paused INSIDE its write (issue 29).

    python -m crashcourse.lab.paused_stop ADDRESS CLAIM_JSON NAME on|off

A real child process (the holder, this module run as above) starts
``fence.observe`` on the claimed work and is held at the boundary
``fenced:observe``, inside the write transaction, its check passed: on
SQLite it holds the file's one write lock; on PostgreSQL its work row's
lock (the dialect's ``lock_row``) and the store's lock SHARED. There it is
frozen (SIGSTOP, the kernel's T state awaited). The operator then cancels the work
(``fence.cancel``, the runtime's stop: the store's lock EXCLUSIVE), in a
thread whose own wait is long (``OPERATOR_WAIT_MS``), so the wait that ends
is the holder's, never the operator's patience. ``stop_against_a_paused_holder``
waits (bounded, ``hold_s``) for the stop, thaws the holder, and reports what
the store's rows say.

What the rows show: on SQLite every writer, the stop included, waits for the
paused holder, for as long as it is frozen; nothing in SQLite ends it (a busy
timeout only bounds how long each waiter waits before it gives up). On
PostgreSQL the server ends a transaction idle for
``idle_in_transaction_session_timeout`` (``store.postgres.IDLE_IN_TRANSACTION_MS``,
set on every runtime connection): the stop commits within that bound while
the holder is still frozen, and the thawed holder, its connection gone, opens
another and is refused by the fence. ``off`` sets that timeout to 0 in the
holder's session: the negative control, where the stop waits for the pause.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import asdict

from crashcourse import claims, store
from crashcourse.boundary import STOP_AT_ENV, boundary
from crashcourse.claims import Claim, fence
from crashcourse.lab.harness import Harness
from crashcourse.lab.processes import stopped
from crashcourse.store.dialect import POSTGRES
from crashcourse.waiting import wait_until, waits_in

BOUNDARY = "fenced:observe"  # inside the write transaction, its check passed
OUTSIDE = "before:observe"  # the control: the same holder, no transaction open
OPERATOR_WAIT_MS = 60_000  # the operator's lock wait: longer than any hold here
BARRIER_S = 10.0  # how long we wait for a process or a row to show a state
LEASE_S = 60.0  # the holder's lease outlives every hold: only the stop ends it

# The server's rows of one session, found by its application_name.
SESSION = """SELECT pid, state, wait_event_type, wait_event,
    extract(epoch FROM state_change)::float8 AS state_change,
    (SELECT array_agg(b) FROM unnest(pg_blocking_pids(pid)) AS b) AS blocked_by
FROM pg_stat_activity WHERE application_name = :name"""


def write_late(conn, claim: Claim, text: str) -> int:
    """The holder's one fenced transcript line; what became of it, printed:
    exit 0 committed, 5 refused by the fence."""
    try:
        fence.observe(conn, claim, {"kind": text})
    except fence.StaleClaim as refused:
        print(f"refused: {refused.reason}")
        return 5
    print("committed")
    return 0


def holder_main(address: str, given: str, name: str, idle: str) -> int:
    """The holder: one fenced transcript line; after a connection the server
    ended, the same write again on a new connection, as a retrying worker
    would. Prints what happened; exit 0 committed, 5 refused."""
    claim = Claim(**json.loads(given))
    conn = open_as(address, name, idle_off=idle == "off")
    if os.environ.get(STOP_AT_ENV) == OUTSIDE:  # held, frozen, holding nothing
        boundary(OUTSIDE)
    try:
        return write_late(conn, claim, "late")
    except Exception as lost:  # noqa: BLE001 - a server that hung up on us
        if store.dialect(conn) is not POSTGRES or not conn.raw.closed:
            raise
        while lost.__context__ is not None:  # the ROLLBACK's error hides the cause
            lost = lost.__context__
        print("connection ended:", str(lost).strip().splitlines()[0])
    return write_late(open_as(address, name + "-again", idle_off=False), claim,
                      "late, retried")


def open_as(address: str, name: str, *, idle_off: bool = False,
            wait_ms: int | None = None):
    """A runtime connection named ``name`` on a server (pg_stat_activity's
    application_name); ``idle_off``: the server never ends its idle
    transaction; ``wait_ms``: how long its writes wait for a lock."""
    if not store.on_server(address):
        return store.connect(address, busy_timeout_ms=wait_ms or
                             store.DEFAULT_BUSY_TIMEOUT_MS)
    conn = store.connect(address)
    conn.raw.execute(f"SET application_name = '{name}'")
    if idle_off:
        conn.raw.execute("SET idle_in_transaction_session_timeout = 0")
    if wait_ms is not None:
        conn.raw.execute(f"SET lock_timeout = {int(wait_ms)}")
    return conn


def session(conn, name: str) -> dict | None:
    """The server's pg_stat_activity row of session ``name``, or None: ended."""
    row = conn.execute(SESSION, {"name": name}).fetchone()
    return None if row is None else dict(row)


def claimed_work(address: str, owner: str) -> Claim:
    """A store with one piece of work, claimed by ``owner`` for ``LEASE_S``."""
    with store.opened(address) as conn:
        fence.install(conn)
        claims.enqueue(conn, "phone:paused-1", "counter", "restock")
        return claims.claim(conn, owner, ttl=LEASE_S)


def operator_stop(address: str, work_id: str, seen: dict) -> threading.Thread:
    """The operator's cancel in a thread of its own; ``seen`` gets when it
    began and the server's commit time (the work row's ``finished``)."""
    def cancel() -> None:  # its connection made in its own thread (sqlite3's rule)
        conn = open_as(address, "operator", wait_ms=OPERATOR_WAIT_MS)
        seen["operator_began"] = store.now(conn)
        try:
            fence.cancel(conn, work_id)
            seen["stop_committed"] = claims.work_row(conn, work_id)["finished"]
        except Exception as failed:  # noqa: BLE001 - reported, judged by the caller
            seen["stop_failed"] = f"{type(failed).__name__}: {failed}"
        finally:
            conn.close()

    thread = threading.Thread(target=cancel, name="operator-stop", daemon=True)
    thread.start()
    return thread


def waiting_for_holder(address: str, thread, watch, holder: dict | None) -> dict:
    """Barrier: the stop is waiting for the holder's lock. On a server, the
    operator's session waits on a Lock that the holder's backend blocks
    (pg_blocking_pids); on SQLite the thread is inside ``BEGIN IMMEDIATE``."""
    if watch is None:
        wait_until(lambda: waits_in(thread, "begin_write", "cancel"), BARRIER_S,
                   what="the operator's cancel waiting at BEGIN IMMEDIATE")
        return {"waits_in": "BEGIN IMMEDIATE"}

    def blocked() -> dict | None:
        row = session(watch, "operator")
        return row if row and holder["pid"] in (row["blocked_by"] or []) else None

    row = wait_until(blocked, BARRIER_S, interval=0.01,
                     what="the operator's session blocked by the holder's")
    return {"waits_in": f"{row['wait_event_type']}:{row['wait_event']}",
            "blocked_by_holder": True}


def stop_against_a_paused_holder(address: str, *, hold_s: float,
                                 idle_timeout: bool = True,
                                 frozen_at: str = BOUNDARY) -> dict:
    """Freeze a holder inside its fenced write, stop its work, wait at most
    ``hold_s`` for the stop while it stays frozen, thaw it; what the store's
    rows (and, on a server, its sessions) said. ``idle_timeout=False`` turns
    the server's idle-in-transaction timeout off in the holder's session;
    ``frozen_at=OUTSIDE`` freezes it before its transaction (a control)."""
    claim = claimed_work(address, "holder")
    server = store.on_server(address)
    seen: dict = {"backend": "postgres" if server else "sqlite", "hold_s": hold_s,
                  "frozen_at": frozen_at,
                  "idle_timeout": idle_timeout and server}
    watch = store.connect(address) if server else None
    try:
        with Harness() as harness:
            child = harness.start(
                ["-m", "crashcourse.lab.paused_stop", address,
                 json.dumps(asdict(claim)), "holder", "on" if idle_timeout else "off"],
                stop_at=frozen_at)
            child.wait_for_boundary()
            child.freeze()  # SIGSTOP inside the transaction; T awaited
            child.release()  # read once it runs again
            holder = session(watch, "holder") if server else None
            if server:
                seen["holder_idle_since"] = holder["state_change"]
                seen["holder_state_frozen"] = holder["state"]
            thread = operator_stop(address, claim.id, seen)
            if frozen_at == BOUNDARY:  # the stop must queue behind the holder
                seen["barrier"] = waiting_for_holder(address, thread, watch, holder)
            thread.join(hold_s)  # bounded: the stop, or the end of the hold
            seen["stop_while_frozen"] = not thread.is_alive() and stopped(child.pid)
            if server and idle_timeout:
                # The server releases the ended transaction's locks (the stop
                # goes on) before its backend leaves pg_stat_activity: wait,
                # bounded, for that exit rather than read the instant after.
                try:
                    wait_until(lambda: session(watch, "holder") is None, BARRIER_S,
                               interval=0.02, what="the holder's session ended")
                except TimeoutError:
                    pass  # recorded as seen below: the check says what is left
            if server:
                seen["holder_session_after_hold"] = session(watch, "holder")
            with store.opened(address, busy_timeout_ms=1) as look:  # a reader
                seen["status_before_thaw"] = claims.work_row(look, claim.id)["status"]
                seen["thawed_at"] = store.now(look)
            child.thaw()
            thread.join(OPERATOR_WAIT_MS / 1000)
            done = child.finish()
        seen.update(holder_exit=done.returncode,
                    holder_said=[line for line in done.stdout.split("\n") if line])
        with store.opened(address) as conn:
            row = claims.work_row(conn, claim.id)
            seen["work"] = {k: row[k] for k in ("status", "generation", "owner")}
            seen["transcript"] = [r["generation"]
                                  for r in fence.transcript(conn, claim.id)]
            seen["refusals"] = [(r["action"], r["reason"], r["generation"])
                                for r in store.table_rows(conn, "refusals", "seq")]
    finally:
        if watch is not None:
            watch.close()
    return measured(seen)


def measured(seen: dict) -> dict:
    """The intervals, on the store's clock: how long the stop waited, and
    when it committed against the thaw and the holder's idle start."""
    committed = seen.get("stop_committed")
    if committed is not None:
        seen["stop_waited_s"] = round(committed - seen["operator_began"], 3)
        seen["stop_after_thaw_s"] = round(committed - seen["thawed_at"], 3)
        if "holder_idle_since" in seen:
            seen["stop_after_idle_s"] = round(committed - seen["holder_idle_since"], 3)
    return seen


if __name__ == "__main__":
    sys.exit(holder_main(*sys.argv[1:5]))
