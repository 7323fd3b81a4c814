"""Grades exercise 10.1 (fenced_finish.py) on a real PostgreSQL server."""

import re
import sqlite3
import time
from dataclasses import replace
from unittest import mock

import pytest

from crashcourse import claims, store
from crashcourse.claims import fence
from crashcourse.store import connect
from crashcourse.waiting import wait_until

WRITES = re.compile(r"\s*(UPDATE|INSERT|DELETE)\b", re.IGNORECASE)


@pytest.fixture
def mod(answer):
    return answer("ch10", "fenced_finish")


@pytest.fixture
def shop(store_url):
    """A store with one piece of work, queued; the connection the answer gets."""
    conn = connect(store_url)
    fence.install(conn)
    claims.enqueue(conn, "phone:restock-flour", "counter", "Restock flour")
    yield conn
    conn.close()


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


@pytest.mark.parametrize("skew", [3600, -3600], ids=["an-hour-fast", "an-hour-slow"])
def test_the_databases_clock_decides_not_the_workers(mod, shop, skew):
    live = claims.claim(shop, "a-holder", ttl=60)
    real = time.time
    with mock.patch("time.time", lambda: real() + skew):
        assert mod.finish(shop, live, "written while live") is True
    claims.enqueue(shop, "phone:restock-oil", "counter-2", "Restock oil")
    lapsed = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, lapsed)
    with mock.patch("time.time", lambda: real() + skew):
        assert mod.finish(shop, lapsed, "written after its lease") is False


def test_a_cancel_between_a_read_and_the_write_is_never_overwritten(mod, shop,
                                                                    store_url):
    """The operator cancels the work from another connection; if the answer
    reads first and writes second, the cancel commits in between (or waits,
    and gives up, if the answer holds a lock on the row)."""
    claim = claims.claim(shop, "a-holder", ttl=60)
    attempts = []

    def operator_cancels():
        rival = connect(store_url)
        rival.raw.execute("SET lock_timeout = 300")
        try:
            fence.cancel(rival, claim.id)
            attempts.append("cancelled")
        except sqlite3.OperationalError:  # locked: the answer holds the row
            attempts.append(None)
        finally:
            rival.close()

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
