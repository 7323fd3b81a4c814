"""Chapter 05's forced schedule, with real ``shop_worker drain`` processes.

The eight-process race of chapter 05 shows what the scheduler happened to do;
its mutant may or may not lose in a given run. Here the loss is forced: worker
a is held at the boundary ``chosen`` (its row picked, its grant not yet
written), then worker b is started. Where a holds no write lock (the
read-first mutant), b picks the same row and is held there too; a is released
and finishes, then b. Where a holds the write lock (the reference claim), b
cannot pick until a has committed, so a is released first and b is held at
its own ``chosen`` afterwards. Every verdict is read from the rows and from
SQLite's lock, never from the workers' reports.
"""

from __future__ import annotations

import sqlite3

from crashcourse import claims, store
from crashcourse.claims import fence, orders
from crashcourse.lab.harness import Harness
from crashcourse.store import connect, count_rows, immediate, opened
from crashcourse.waiting import wait_until
from crashcourse.workers.shop_worker import CHOSEN, LEASE_OUTRUN, SIGNED_OFF

WAIT = 60.0  # seconds, for each boundary and exit: bounded, loaded CI margin


def store_clock(db) -> float:
    """The clock the lease is judged by (the store's)."""
    with opened(db) as conn:
        return store.now(conn)


def queue(db) -> list[str]:
    """Two queued items in two sessions, the flour request the older."""
    with opened(db) as conn:
        fence.install(conn)
        return [claims.enqueue(conn, "phone:flour", "counter", "Restock flour"),
                claims.enqueue(conn, "mail:sugar", "back-office", "Restock sugar")]


def write_lock_free(db) -> bool:
    """SQLite's own answer, without waiting: could another writer begin now?"""
    conn = connect(db, busy_timeout_ms=0)
    try:
        with immediate(conn):
            return True
    except sqlite3.OperationalError:  # "database is locked"
        return False
    finally:
        conn.close()


def per_item(db, items) -> list[dict]:
    """For each item: its claims (generation, owner), transcript lines, status."""
    with opened(db) as conn:
        return [{"claims": [tuple(r) for r in conn.execute(
                    "SELECT generation, owner FROM claims WHERE work_id = :id"
                    " ORDER BY generation", {"id": item})],
                 "lines": conn.execute("SELECT count(*) FROM transcript"
                                       " WHERE work_id = :id",
                                       {"id": item}).fetchone()[0],
                 "status": claims.work_row(conn, item)["status"]}
                for item in items]


def forced(db, *flags: str) -> dict:
    """Hold a at ``chosen``; start b; hold b there too if a left it the lock."""
    seen = {}
    with Harness() as harness:
        def start(owner):
            return harness.start(["-m", "crashcourse.workers.shop_worker", "drain",
                                  "--db", str(db), "--owner", owner, "--ttl", "60",
                                  "--limit", "1", *flags], stop_at=CHOSEN)

        a = start("a")
        a.wait_for_boundary(WAIT)
        seen["lock_free_while_a_held"] = write_lock_free(db)
        b = start("b")
        if seen["lock_free_while_a_held"]:
            b.wait_for_boundary(WAIT)  # both held, each with its row picked
            with opened(db) as conn:
                seen["claims_while_both_held"] = count_rows(conn, "claims")
            a.release()
            finished = [a.finish(WAIT)]
            b.release()
        else:  # b cannot pick a row until a commits: release a first
            a.release()
            finished = [a.finish(WAIT)]
            b.wait_for_boundary(WAIT)
            b.release()
        finished.append(b.finish(WAIT))
    assert [f.returncode for f in finished] == [0, 0], finished  # no traceback
    return seen


def test_the_mutant_held_in_its_gap_claims_one_item_twice(tmp_path):
    """Bug caught: the mutant's boundary moved after its grant (or inside its
    write lock): b then picks the sugar request, or a holds the lock."""
    db = tmp_path / "agent.db"
    flour, sugar = queue(db)
    seen = forced(db, "--read-first")
    assert seen == {"lock_free_while_a_held": True, "claims_while_both_held": 0}
    assert per_item(db, [flour, sugar]) == [
        {"claims": [(1, "a"), (2, "b")], "lines": 2, "status": claims.DONE},
        {"claims": [], "lines": 0, "status": claims.READY}]


def test_the_reference_held_at_its_choice_holds_the_lock(tmp_path):
    """Bug caught: the drain's reference claim replaced by the read-first
    mutant: the lock is free at ``chosen``, and b picks the flour request too.
    (That ``claims.claim`` picks inside its lock is tests/claims/
    test_interleaving.py's: b may start after a committed, so this test
    cannot see a claim that picks too early.)"""
    db = tmp_path / "agent.db"
    flour, sugar = queue(db)
    assert forced(db) == {"lock_free_while_a_held": False}
    assert per_item(db, [flour, sugar]) == [
        {"claims": [(1, "a")], "lines": 1, "status": claims.DONE},
        {"claims": [(1, "b")], "lines": 1, "status": claims.DONE}]


def test_the_limit_stops_a_drain_and_bad_limits_are_refused(tmp_path):
    db = tmp_path / "agent.db"
    flour, sugar = queue(db)
    with Harness() as harness:
        command = ["-m", "crashcourse.workers.shop_worker", "drain", "--db",
                   str(db), "--owner", "w", "--limit"]
        refusals = [harness.run([*command, bad]) for bad in ("0", "x", "+1")]
        done = harness.run([*command, "1"])
    assert [r.returncode for r in refusals] == [2, 2, 2]
    assert all(len(r.stderr.splitlines()) == 1 for r in refusals), refusals
    assert done.returncode == 0, done.stderr
    assert [item["claims"] for item in per_item(db, [flour, sugar])] == [
        [(1, "w")], []]


def test_a_lease_outrun_before_the_admission_is_one_line_and_sends_nothing(tmp_path):
    """A worker held after its sign-off until its lease no longer covers the
    request's wait (what a loaded machine or a pause does to it) is refused
    at the admission: exit 6, one line naming it, the order still SIGNED_OFF
    and nothing sent (the URL is never asked: no server listens there). It
    was a LeaseTooShort traceback and exit 1 (chapter 06's quick checkpoint
    lost a trial so at load 15)."""
    db = tmp_path / "shop.db"
    with opened(db) as conn:
        orders.install(conn)
        work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    with Harness() as harness:
        worker = harness.start(
            ["-m", "crashcourse.workers.shop_worker", "send", "--db", str(db),
             "--url", "http://127.0.0.1:9", "--ttl", "1.0", "--wait", "0.5",
             "--work", work], stop_at=SIGNED_OFF)
        worker.wait_for_boundary(WAIT)
        with opened(db) as conn:
            expires = claims.work_row(conn, work)["expires"]
        wait_until(lambda: store_clock(db) > expires - 0.5, WAIT,
                   what="the lease's end closer than the request's wait")
        worker.release()
        done = worker.finish(WAIT)
    assert done.returncode == LEASE_OUTRUN, (
        "a worker whose lease no longer covered its request's wait did not say"
        f" so with its documented status: exit {done.returncode}, {done.stderr}")
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr and len(lines) == 1, (
        f"the refusal was not one line: {done.stderr}")
    with opened(db) as conn:
        assert orders.order_for(conn, work)["status"] == orders.SIGNED_OFF, (
            "the order left SIGNED_OFF although the admission was refused")
