"""Grades exercise 10.1 (fenced_finish.py) on a real PostgreSQL server."""

import re
import sqlite3
import threading
from dataclasses import replace

import pytest

from crashcourse import claims, store
from crashcourse.claims import fence
from crashcourse.waiting import wait_until

WRITES = re.compile(r"\s*(UPDATE|INSERT|DELETE)\b", re.IGNORECASE)


@pytest.fixture
def mod(answer):
    return answer("ch10", "fenced_finish")


@pytest.fixture
def shop(open_store):
    """A store with one piece of work, queued; the connection the answer gets."""
    conn = open_store()
    fence.install(conn)
    claims.enqueue(conn, "phone:restock-flour", "counter", "Restock flour")
    return conn


def row(conn) -> dict:
    return dict(conn.execute("SELECT * FROM work").fetchone())


def lapse(conn, claim) -> None:
    """Wait until the SERVER's clock has passed ``claim``'s lease (bounded)."""
    wait_until(lambda: store.now(conn) > claim.expires, 10,
               what="the server's clock past the lease")


class Watched:
    """The answer's connection, as the answer sees it; it keeps the SQL it was
    given. ``between`` runs just before the answer's second statement, if
    there is one: whatever another writer could do between a read and a write."""

    def __init__(self, conn, between=None):
        self.conn, self.between, self.statements = conn, between, []

    def execute(self, sql, parameters=None):
        if len(self.statements) == 1 and self.between is not None:
            self.between()
        self.statements.append(sql)
        return self.conn.execute(sql, parameters)

    def __getattr__(self, name):  # anything else: the real connection's
        return getattr(self.conn, name)


def test_the_live_holder_writes(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=60)
    before = store.now(shop)
    assert mod.finish(shop, claim, "6 sacks ordered") is True
    after = store.now(shop)
    found = row(shop)
    assert (found["status"], found["outcome"], found["expires"]) == (
        "DONE", "6 sacks ordered", None)
    assert before <= found["finished"] <= after  # the database's now


def test_it_is_one_update_and_nothing_else(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=60)
    watched = Watched(shop)
    assert mod.finish(watched, claim, "6 sacks ordered") is True
    assert len(watched.statements) == 1, watched.statements
    assert WRITES.match(watched.statements[0]).group(1).upper() == "UPDATE"


def test_a_superseded_holder_is_refused_and_changes_nothing(mod, shop):
    old = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, old)
    new = claims.claim(shop, "b-taker", ttl=60)
    assert new.generation == 2
    assert mod.finish(shop, old, "60 sacks ordered") is False
    found = row(shop)
    assert (found["status"], found["owner"], found["generation"], found["outcome"]) \
        == ("RUNNING", "b-taker", 2, None)
    assert mod.finish(shop, new, "6 sacks ordered") is True


def test_a_lapsed_lease_is_refused_though_nobody_took_the_work(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, claim)
    assert mod.finish(shop, claim, "6 sacks ordered") is False
    assert (row(shop)["status"], row(shop)["outcome"]) == ("RUNNING", None)


def test_another_owner_with_the_same_generation_is_refused(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=60)
    assert mod.finish(shop, replace(claim, owner="impostor"), "x") is False
    assert mod.finish(shop, replace(claim, generation=2), "x") is False
    assert row(shop)["outcome"] is None


def test_a_finished_claim_cannot_finish_twice(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=60)
    assert mod.finish(shop, claim, "first") is True
    assert mod.finish(shop, claim, "second") is False
    assert row(shop)["outcome"] == "first"


@pytest.mark.parametrize("skew", [3600, -3600],
                         ids=["database-an-hour-ahead", "database-an-hour-behind"])
def test_the_databases_clock_decides_not_the_workers(mod, shop, db_clock, skew):
    """The DATABASE's clock really differs from the worker's host clock (the
    grader's shifted ``clock_timestamp()``): nothing in this process is
    patched, so every clock the worker could read is an hour off."""
    db_clock.shift(skew)
    live = claims.claim(shop, "a-holder", ttl=60)
    assert mod.finish(shop, live, "written while live") is True
    claims.enqueue(shop, "phone:restock-oil", "counter-2", "Restock oil")
    lapsed = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, lapsed)
    assert mod.finish(shop, lapsed, "written after its lease") is False
    assert claims.work_row(shop, lapsed.id)["outcome"] is None


def test_the_instant_a_lease_ends_belongs_to_the_next_claimer(mod, shop, db_clock):
    """The database's clock stopped at the lease's exact end: a claimer may
    take the work then (its pick is ``expires <= now``), so the holder may not."""
    ends = float(int(store.now(shop)) + 100)
    db_clock.freeze(ends - 60)
    claim = claims.claim(shop, "a-holder", ttl=60)
    assert claim.expires == ends
    db_clock.freeze(ends - 0.001)
    still = claims.claim(shop, "a-holder", ttl=60, work_id=claim.id)
    assert still is None  # a millisecond before the end: nobody may take it
    db_clock.freeze(ends)
    assert mod.finish(shop, claim, "6 sacks ordered") is False
    assert claims.work_row(shop, claim.id)["outcome"] is None
    taken = claims.claim(shop, "b-taker", ttl=60, work_id=claim.id)
    assert taken is not None and taken.generation == 2


def test_every_part_of_the_fence_refuses_on_its_own(mod, shop):
    """A row that names this claim, with a live lease, but is not RUNNING (a
    tool set it BLOCKED and left the lease on): the status alone refuses."""
    claim = claims.claim(shop, "a-holder", ttl=60)
    shop.execute("UPDATE work SET status = 'BLOCKED' WHERE id = :id", {"id": claim.id})
    assert mod.finish(shop, claim, "6 sacks ordered") is False
    found = row(shop)
    assert (found["status"], found["outcome"]) == ("BLOCKED", None)


def blocked_behind(rival, answer: threading.Thread, what: str) -> None:
    """Wait (bounded) until some backend waits for a lock ``rival`` holds, or
    the answer has returned without waiting (its rows then tell)."""
    wait_until(lambda: not answer.is_alive() or rival.raw.execute(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))").fetchone()[0] > 0,
        30, what=what)


def test_a_write_that_waited_for_the_row_is_judged_when_it_lands(mod, shop,
                                                                 open_store):
    """Another writer holds the row (it has updated it, not committed) while the
    lease is live; the answer's write waits behind it; the lease ends during
    the wait; then the writer commits. PostgreSQL re-checks the WHERE clause
    on the new row version: judged by the clock at THAT instant (not the one
    the statement began at, ``now()``), the lease is over."""
    claim = claims.claim(shop, "a-holder", ttl=3)
    rival = open_store()
    rival.raw.execute("BEGIN")
    rival.raw.execute("UPDATE work SET expires = expires WHERE id = %s", (claim.id,))
    landed = []
    writer = threading.Thread(
        target=lambda: landed.append(mod.finish(shop, claim, "6 sacks ordered")))
    writer.start()
    try:
        blocked_behind(rival, writer, "the answer's write waiting for the row")
        began_waiting = store.now(rival)
        lapse(rival, claim)
    finally:
        rival.raw.execute("COMMIT")
        writer.join(30)
    assert began_waiting < claim.expires, "the write must start inside the lease"
    assert landed == [False], "a write judged by the instant it began waiting"
    assert (row(shop)["status"], row(shop)["outcome"]) == ("RUNNING", None)


def test_a_cancel_between_a_read_and_the_write_is_never_overwritten(mod, shop,
                                                                    open_store):
    """The operator cancels the work from another connection; if the answer
    reads first and writes second, the cancel commits in between (or waits,
    and gives up, if the answer holds a lock on the row)."""
    claim = claims.claim(shop, "a-holder", ttl=60)
    attempts = []

    def operator_cancels():
        rival = open_store()
        rival.raw.execute("SET lock_timeout = 300")
        try:
            fence.cancel(rival, claim.id)
            attempts.append("cancelled")
        except sqlite3.OperationalError:  # locked: the answer holds the row
            attempts.append(None)
        finally:
            rival.raw.execute("RESET lock_timeout")

    try:
        mod.finish(Watched(shop, operator_cancels), claim, "6 sacks ordered")
    except sqlite3.OperationalError:
        pass  # the answer's own wait ran out: the rows tell
    found = row(shop)
    if attempts == ["cancelled"]:
        assert (found["status"], found["outcome"]) == ("CANCELLED", None), (
            "the holder's write landed over the operator's cancel")
    else:
        assert (found["status"], found["outcome"]) == ("DONE", "6 sacks ordered")
