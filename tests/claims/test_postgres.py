"""What only a PostgreSQL store has (chapter 10): holders on several
connections at once, and a clock that is the database's.

On SQLite one writer at a time decides everything, and the only clock is the
one host's. On a server, fenced writes run side by side and lock the work row
instead; a holder can be cut off while another claims; and every lease is
judged by the server's clock, whatever the worker's says. Each case here uses
two (or three) real connections to one schema of the session's server.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed")

from crashcourse import claims, control, journal
from crashcourse.claims import fence, orders
from crashcourse.journal.plan import Step, UnknownTask, load_plan, make_plan, save_plan  # noqa: E402
from crashcourse.lab.example import FLOUR, ScriptedModel  # noqa: E402
from crashcourse.store import count_rows, immediate, opened, table_rows  # noqa: E402
from crashcourse.waiting import wait_until  # noqa: E402

pytestmark = pytest.mark.postgres_only("only a server: several writers, its clock")
WAIT = 10.0  # seconds: the bound on every wait below


@pytest.fixture
def agent(store_at):
    """The address of an installed agent store (claims, fence, orders)."""
    address = store_at("agent")
    with opened(address) as conn:
        orders.install(conn)
    return address


def past(conn, instant: float) -> float:
    """Wait (bounded) until the SERVER's clock is past ``instant``; its time."""

    def now_if_past() -> float | None:
        now = conn.server_time()
        return now if now > instant else None

    return wait_until(now_if_past, WAIT, interval=0.01,
                      what="the server's clock past the instant")


def waiting_for_a_lock(conn) -> bool:
    """Whether some session of this server waits for a lock now."""
    return conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted"
                        ).fetchone()[0] > 0


def queued(conn, origin: str = "phone:flour") -> str:
    return claims.enqueue(conn, origin, origin, "restock flour")


def test_a_cut_off_holder_is_refused_every_write_once_another_holds(agent):
    """The holder goes silent past its lease (by the server's clock), a
    worker on another connection claims, the holder comes back: each late
    write is refused, noted in refusals, and nothing of it is written."""
    with opened(agent) as holder_conn, opened(agent) as taker_conn:
        work = queued(holder_conn)
        old = claims.claim(holder_conn, "holder", ttl=0.5, work_id=work)
        key = orders.propose(holder_conn, old, ScriptedModel(FLOUR))
        orders.sign_off(holder_conn, key)
        before = past(taker_conn, old.expires)  # cut off: it says nothing meanwhile
        new = claims.claim(taker_conn, "taker", ttl=60)
        assert (new.id, new.generation) == (work, old.generation + 1)
        late = {"observe": lambda: fence.observe(holder_conn, old, {"kind": "late"}),
                "send": lambda: orders.admit(holder_conn, old, key, wait_s=0.1),
                "finish": lambda: fence.finish(holder_conn, old, claims.DONE, "late")}
        for attempt in late.values():
            with pytest.raises(fence.StaleClaim, match="superseded"):
                attempt()
        after = taker_conn.server_time()
        refused = table_rows(taker_conn, "refusals", "seq")
        assert [(r["action"], r["reason"]) for r in refused] == [
            (action, "superseded") for action in late]
        # stamped by the server's clock, to the microsecond (not a 4-byte REAL)
        assert all(before <= r["at"] <= after for r in refused)
        assert [m["kind"] for m in fence.transcript(taker_conn, work)] == ["proposal"]
        assert orders.order_for(taker_conn, work)["status"] == orders.SIGNED_OFF
        assert claims.work_row(taker_conn, work)["owner"] == "taker"


def test_a_fenced_write_holds_its_row_so_no_claim_lands_before_its_commit(agent):
    with opened(agent) as holder_conn, opened(agent) as taker_conn:
        work = queued(holder_conn)
        holder = claims.claim(holder_conn, "holder", ttl=0.4, work_id=work)
        with pytest.raises(fence.StaleClaim, match="lease expired at commit"):
            with fence.fenced(holder_conn, holder, "observe"):  # the check passed
                past(taker_conn, holder.expires)  # a slow write outlives the lease
                assert claims.claim(taker_conn, "taker", ttl=60) is None  # row held
                holder_conn.execute(
                    "INSERT INTO transcript (work_id, generation, message)"
                    " VALUES (:id, :generation, '{}')",
                    {"id": work, "generation": holder.generation})
        taken = claims.claim(taker_conn, "taker", ttl=60)  # now, and only now
        assert (taken.id, taken.generation) == (work, 2)
        # the slow write's row did not commit after its lease (issue 29)
        assert count_rows(taker_conn, "transcript") == 0


def test_a_write_that_waited_for_the_row_is_judged_after_the_wait(agent):
    """Two writes of one claim: the second waits for the first's row lock,
    past the lease. Judged by the clock read AFTER the wait, it is refused;
    the first, whose lease ran out inside it, is refused at its commit."""
    with (opened(agent) as first, opened(agent) as second,
          opened(agent) as watcher):
        work = queued(first)
        claim = claims.claim(first, "holder", ttl=0.6, work_id=work)
        refused = []

        def late_write():
            try:
                fence.observe(second, claim, {"kind": "waited"})
            except fence.StaleClaim as stale:
                refused.append(stale.reason)

        with (pytest.raises(fence.StaleClaim, match="lease expired at commit"),
              fence.fenced(first, claim, "observe")):
            waiter = threading.Thread(target=late_write)
            waiter.start()

            def waits() -> bool:  # it asked before the lease ran out
                assert waiter.is_alive(), "the late write ended without waiting"
                return waiting_for_a_lock(watcher)

            wait_until(waits, WAIT, interval=0.01,
                       what="the late write waiting for the row's lock")
            past(watcher, claim.expires)
        waiter.join(WAIT)
        assert not waiter.is_alive()
    assert refused == ["lease expired"]


def test_fenced_writes_of_other_work_run_side_by_side(agent):
    with opened(agent) as one, opened(agent) as other:
        first = claims.claim(one, "w1", ttl=60, work_id=queued(one, "phone:a"))
        second = claims.claim(other, "w2", ttl=60, work_id=queued(one, "phone:b"))
        other.raw.execute("SET lock_timeout = 300")  # a wait would fail, not hang
        with fence.fenced(one, first, "observe"):
            assert fence.observe(other, second, {"kind": "meanwhile"}) > 0
        assert [m["kind"] for m in fence.transcript(one, second.id)] == ["meanwhile"]


def test_a_record_of_the_past_runs_beside_other_works_fenced_write(agent):
    """Bug: ``fenced(record=True)`` (an outcome, a lease given back) takes the
    store's lock EXCLUSIVE: every holder's record then waits for every other
    work's fenced write. Deterministic: the first holder's write is open
    while the second gives its lease back; a wait would fail, not hang."""
    with opened(agent) as one, opened(agent) as other:
        first = claims.claim(one, "w1", ttl=60, work_id=queued(one, "phone:a"))
        second = claims.claim(other, "w2", ttl=60, work_id=queued(one, "phone:b"))
        other.raw.execute("SET lock_timeout = 300")
        with fence.fenced(one, first, "observe"):
            fence.release(other, second, done=True, outcome="sent")
        assert claims.work_row(one, second.id)["status"] == claims.DONE


@pytest.mark.parametrize("operator_write", ["cancel", "pause"])
def test_an_operators_write_waits_for_any_fenced_write_in_progress(agent,
                                                                   operator_write):
    """Bug: ``cancel`` or ``set_paused`` takes the store's lock SHARED, as a hot
    path does: it lands while a holder's fenced write is open, and that write
    commits after the stop. Deterministic: one holder's write is open; the
    operator's write on OTHER work (no row lock between them), whose wait
    would fail rather than hang, is refused as busy and changes nothing;
    after the holder's commit it lands."""
    with opened(agent) as holder, opened(agent) as operator:
        claim = claims.claim(holder, "w", ttl=60, work_id=queued(holder))
        other = queued(holder, "phone:other")
        operator.raw.execute("SET lock_timeout = 300")
        write = {"cancel": lambda: fence.cancel(operator, other),
                 "pause": lambda: control.set_paused(operator, True)}[operator_write]
        before = {table: table_rows(operator, table, "id")
                  for table in ("work", "runtime_control")}
        with fence.fenced(holder, claim, "observe"):
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                write()
        assert {table: table_rows(operator, table, "id")
                for table in ("work", "runtime_control")} == before
        write()
        assert (claims.work_row(operator, other)["status"] == claims.CANCELLED
                or control.is_paused(operator))


@pytest.mark.parametrize("skew", [3600.0, -3600.0], ids=["ahead", "behind"])
def test_a_workers_clock_changes_no_lease(agent, monkeypatch, skew):
    """An hour ahead, a live lease must not look lapsed (the send would not
    fit, the write refused); an hour behind, a lapsed one must not look live."""
    with opened(agent) as conn:
        work = queued(conn)
        claim = claims.claim(conn, "w", ttl=30 if skew > 0 else 0.3, work_id=work)
        key = orders.propose(conn, claim, ScriptedModel(FLOUR))
        orders.sign_off(conn, key)
        if skew < 0:
            past(conn, claim.expires)
        monkeypatch.setattr(time, "time", lambda real=time.time: real() + skew)
        if skew > 0:
            assert orders.admit(conn, claim, key, wait_s=5.0) == FLOUR
            fence.finish(conn, claim, claims.BLOCKED, "supplier outcome unknown")
            row = claims.work_row(conn, work)  # its retry is timed by the server
            assert row["status"] == claims.BLOCKED
            assert row["finished"] <= conn.server_time() < row["available_after"]
        else:
            with pytest.raises(fence.StaleClaim, match="lease expired"):
                orders.admit(conn, claim, key, wait_s=0.1)
            assert orders.order_for(conn, work)["status"] == orders.SIGNED_OFF


def test_an_error_swallowed_inside_a_fenced_write_fails_loudly_not_silently(agent):
    """PostgreSQL ends a transaction at its first error, and a COMMIT after
    it rolls back in silence: the worker would believe its transcript row
    written. The COMMIT is refused instead, and nothing is written."""
    with opened(agent) as conn:
        claim = claims.claim(conn, "w", ttl=60, work_id=queued(conn))
        key = orders.propose(conn, claim, ScriptedModel(FLOUR))
        with pytest.raises(sqlite3.OperationalError, match="aborted"):
            with fence.fenced(conn, claim, "observe"):
                conn.execute("INSERT INTO transcript (work_id, generation, message)"
                             " VALUES (:id, 1, '{\"kind\": \"note\"}')",
                             {"id": claim.id})
                try:  # "already proposed is fine": on SQLite the note would stay
                    conn.execute("INSERT INTO orders (operation_key, work_id, sku,"
                                 " quantity, unit_cents, status) VALUES (:key,"
                                 " :id, 'flour', 1, 1, 'DRAFT')",
                                 {"key": key, "id": claim.id})
                except sqlite3.IntegrityError:
                    pass
        assert [m["kind"] for m in fence.transcript(conn, claim.id)] == ["proposal"]
        fence.observe(conn, claim, {"kind": "note"})  # the connection goes on


def test_a_fresh_schema_beside_an_installed_one_reads_as_empty(agent, store_at):
    """Whether a table exists is asked in the store's own schema: the one
    beside it, installed and paused, changes nothing here."""
    plan = make_plan("touch", [Step(1, "touch", {})])
    with opened(agent) as installed:
        control.set_paused(installed, True)
        control.start_scheduler(installed, "sam")
        save_plan(installed, plan)
        journal.install(installed)
        installed.execute(
            "INSERT INTO journal (task, step, operation_key, action, args,"
            " before_state, outcome) VALUES ('t', 1, 'k', 'a', '{}', '{}', '{}')")
    with opened(store_at("fresh")) as fresh:
        assert control.is_paused(fresh) is False
        assert control.scheduler_may_run(fresh) is False
        assert control.snapshot(fresh) == {table: [] for table in control.TABLES}
        assert journal.confirmed_count(fresh, "t") == 0
        assert journal.entries(fresh, "t") == []
        with pytest.raises(UnknownTask):
            load_plan(fresh, plan.task)


def held_back_while_locked(conn, locker, locked: str, waiting: str) -> None:
    """While a second connection row-locks the turn ``locked``, a claim takes
    nothing (``waiting``, a turn after it, stays queued); once it lets go, the
    claim takes ``locked``."""
    with immediate(locker, shared=True):
        locker.execute("SELECT id FROM work WHERE id = :id FOR UPDATE",
                       {"id": locked})
        assert claims.claim(conn, "w", ttl=60) is None
    assert claims.work_row(conn, waiting)["status"] == claims.READY
    assert claims.claim(conn, "w", ttl=60).id == locked


def test_a_turn_another_claimer_has_locked_holds_back_its_session(agent):
    """Bug: the pick without its ``FIRST`` rule (a turn waits for its
    session's turns before it): a claimer skips the session's first turn,
    row-locked by another claimer (``SKIP LOCKED``), and takes the second,
    a conversation out of order. Made deterministic: a second connection
    holds the first turn's row lock while the claim runs, then lets go."""
    with opened(agent) as conn, opened(agent) as locker:
        first = claims.enqueue(conn, "phone:s:1", "s", "turn 1")
        second = claims.enqueue(conn, "phone:s:2", "s", "turn 2")
        held_back_while_locked(conn, locker, first, second)


def test_turns_queued_at_one_instant_keep_their_order_past_a_lock(agent):
    """Bug: ``FIRST``'s row comparison without its last tie-break (``seq``,
    the order turns were queued in): two turns of a session queued at one
    instant of the store's clock (equal ``created``) are then not before
    one another, and a claimer passes the first, row-locked by another
    claimer, and takes the second. The instant is written by hand."""
    with opened(agent) as conn, opened(agent) as locker:
        first = claims.enqueue(conn, "phone:s:1", "s", "turn 1")
        second = claims.enqueue(conn, "phone:s:2", "s", "turn 2")
        with immediate(conn):
            conn.execute("UPDATE work SET created = :at WHERE session = 's'",
                         {"at": 1_796_000_000.0})
        held_back_while_locked(conn, locker, first, second)


def test_a_control_turn_another_claimer_has_locked_holds_back_its_session(agent):
    """Bug: ``FIRST`` reads claim order with ``control`` ascending (a turn
    compared the wrong way round): a control turn (a stop) queued after an
    ordinary turn of its session comes FIRST in claim order; row-locked by
    another claimer, it must hold the ordinary turn back, not let it go
    ahead of the stop."""
    with opened(agent) as conn, opened(agent) as locker:
        ordinary = claims.enqueue(conn, "phone:s:1", "s", "turn 1")
        stop = claims.enqueue(conn, "phone:s:stop", "s", "stop", control=True)
        held_back_while_locked(conn, locker, stop, ordinary)


def test_a_claim_waits_for_an_operators_write_in_progress(agent):
    """Bug: the claim's function takes the store's lock only when its try
    succeeds (the wait skipped), or gives up at once, or its error reaches
    the caller as psycopg's own: an operator's EXCLUSIVE write (a pause, a
    cancel) is open, and a claim lands inside it. Deterministic: the
    operator's write is open; the claim, whose wait would fail rather than
    hang, is refused as busy (sqlite3's error, as every store error) and
    takes nothing; after the commit it takes the work."""
    with opened(agent) as operator, opened(agent) as claimer:
        work = queued(operator)
        claimer.raw.execute("SET lock_timeout = 300")  # a wait fails, never hangs
        with immediate(operator):
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                claims.claim(claimer, "w", ttl=60)
        assert claims.work_row(claimer, work)["status"] == claims.READY
        assert claims.claim(claimer, "w", ttl=60).id == work


def test_a_claim_holds_the_store_lock_shared_not_exclusive(agent):
    """Bug: the claim's function tries the store's lock EXCLUSIVE first (it
    gets it whenever nobody holds it): every claim then shuts out every
    other claim and fenced write until it commits, where chapter 10's hot
    paths run side by side. Deterministic: the claim's transaction is held
    open; meanwhile a second session gets the store's lock SHARED and not
    EXCLUSIVE (tries: neither waits)."""
    with opened(agent) as conn, opened(agent) as other:
        work = queued(conn)
        conn.raw.execute("BEGIN")  # the claim's statement, its transaction open
        try:
            assert claims.claim(conn, "w", ttl=60).id == work
            tries = {mode: other.execute(f"SELECT pg_try_advisory_xact_lock{mode}(:k)"
                                         " AS got", {"k": other.store_lock}
                                         ).fetchone()["got"]
                     for mode in ("_shared", "")}
        finally:
            conn.raw.execute("ROLLBACK")
        assert tries == {"_shared": True, "": False}
