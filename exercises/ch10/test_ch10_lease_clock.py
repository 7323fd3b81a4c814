"""Grades exercise 10.3 (lease_clock.py) on a real PostgreSQL server whose
clock is an hour off the worker's, with rivals on the row."""

import math
import sqlite3
import threading

import pytest

from crashcourse import claims, store
from crashcourse.claims import fence
from crashcourse.waiting import wait_until

HOUR = 3600.0
WORLD = "the grader's world, not your answer: "  # a set-up assert's message


@pytest.fixture
def mod(answer):
    return answer("ch10", "lease_clock")


@pytest.fixture
def shop(open_store):
    conn = open_store()
    fence.install(conn)
    claims.enqueue(conn, "phone:restock-flour", "counter", "Restock flour")
    return conn


def expires(conn) -> float | None:
    return conn.execute("SELECT expires FROM work").fetchone()[0]


def lapse(conn, claim) -> None:
    """Wait until the SERVER's clock has passed ``claim``'s lease (bounded)."""
    wait_until(lambda: store.now(conn) > claim.expires, 10,
               what="the server's clock past the lease")


class Watched:
    """The answer's connection, as the answer sees it. ``between`` runs just
    before the answer's second statement: whatever another writer could do
    between a read and a write."""

    def __init__(self, conn, between):
        self.conn, self.between, self.statements = conn, between, 0

    def execute(self, sql, parameters=None):
        self.statements += 1
        if self.statements == 2:
            self.between()
        return self.conn.execute(sql, parameters)

    def __getattr__(self, name):  # anything else: the real connection's
        return getattr(self.conn, name)


def blocked_behind(rival, answer: threading.Thread, what: str) -> None:
    """Wait (bounded) until some backend waits for a lock ``rival`` holds, or
    the answer has returned without waiting (its rows then tell)."""
    wait_until(lambda: not answer.is_alive() or rival.raw.execute(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))").fetchone()[0] > 0,
        30, what=what)


def test_a_renewal_ends_the_lease_ttl_seconds_from_the_databases_now(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=5)
    before = store.now(shop)
    renewed = mod.renew(shop, claim, 60)
    after = store.now(shop)
    assert before + 60 <= renewed <= after + 60, (
        "the renewed lease does not end 60 s from the database's now: every"
        " host compares it with the database's clock (not a monotonic or"
        f" host clock); it ends {renewed}, the database's clock read {before}"
        f" before and {after} after")
    written = expires(shop)
    assert written == renewed, (  # what every host will read
        f"renew answered {renewed}, and the row's lease ends {written}")


@pytest.mark.parametrize("skew", [HOUR, -HOUR],
                         ids=["database-an-hour-ahead", "database-an-hour-behind"])
def test_a_workers_clock_an_hour_off_changes_nothing(mod, shop, db_clock, skew):
    """The database's clock really is an hour off the worker host's (nothing
    in this process is patched): every clock the worker could read is wrong."""
    db_clock.shift(skew)
    claim = claims.claim(shop, "a-holder", ttl=5)
    before = store.now(shop)
    renewed = mod.renew(shop, claim, 60)
    clock = (f"with the database's clock {skew:+.0f} s off the worker's, the"
             " lease was written by the worker's clock; write it by the"
             " database's (clock_timestamp())")
    assert renewed is not None, f"the live lease was not renewed: {clock}"
    after = store.now(shop)
    assert before + 60 <= renewed <= after + 60, (
        f"the renewed lease ends {renewed}, not 60 s from the database's now"
        f" ({before} to {after}): {clock}")
    # another host, its clock right, sees a live lease: it may not take over
    taken = claims.claim(shop, "b-taker", ttl=60)
    assert taken is None, (
        f"another host took over the work just renewed ({taken}): {clock}")


def test_a_lapsed_lease_is_never_brought_back(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, claim)
    was = expires(shop)
    renewed = mod.renew(shop, claim, 60)
    assert renewed is None, (
        "a lapsed lease was brought back (renewed to"
        f" {renewed}): the fence must check that the lease is still running;"
        " once over, another host may already be taking the work")
    assert expires(shop) == was, (
        f"the refused renewal moved the lease from {was} to {expires(shop)}")
    taken = claims.claim(shop, "b-taker", ttl=60)  # the work is free to take
    assert taken is not None and taken.generation == 2, (
        f"after the lapsed lease b-taker could not claim the work: {taken}")


def test_a_superseded_holder_cannot_renew_the_new_holders_lease(mod, shop):
    old = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, old)
    new = claims.claim(shop, "b-taker", ttl=30)
    was = expires(shop)
    renewed = mod.renew(shop, old, 600)
    assert renewed is None, (
        "the superseded holder renewed b-taker's lease (to"
        f" {renewed}): the generation and owner are part of the fence")
    assert expires(shop) == was, (
        f"the refused renewal moved b-taker's lease from {was} to {expires(shop)}")
    assert mod.renew(shop, new, 60) is not None, (
        "the new holder's live lease was not renewed")


@pytest.mark.parametrize("ttl", [0, -5, math.nan, math.inf, 7200, "60"],
                         ids=["zero", "negative", "nan", "inf", "two-hours", "text"])
def test_a_bad_ttl_is_refused_and_changes_nothing(mod, shop, ttl):
    claim = claims.claim(shop, "a-holder", ttl=30)
    was = expires(shop)
    with pytest.raises((ValueError, TypeError)):
        renewed = mod.renew(shop, claim, ttl)
        pytest.fail(f"a renewal for ttl={ttl!r} was made (to {renewed})"
                    " instead of a ValueError or TypeError")
    assert expires(shop) == was, (
        f"the refused renewal (ttl={ttl!r}) moved the lease from {was} to"
        f" {expires(shop)}")


def test_the_instant_a_lease_ends_it_cannot_be_renewed(mod, shop, db_clock):
    """The database's clock stopped at the lease's exact end: the instant a
    claimer may take the work (``expires <= now``)."""
    ends = float(int(store.now(shop)) + 100)
    db_clock.freeze(ends - 30)
    claim = claims.claim(shop, "a-holder", ttl=30)
    assert claim.expires == ends, (
        f"{WORLD}the lease was to end at {ends}, and ends at {claim.expires}")
    db_clock.freeze(ends)
    renewed = mod.renew(shop, claim, 60)
    assert renewed is None, (
        f"at the lease's very end it was renewed (to {renewed}), while a"
        " claimer may take the work then: live while expires > now, not >=")
    assert expires(shop) == ends, (
        f"the refused renewal moved the lease from {ends} to {expires(shop)}")


def test_a_cancel_between_a_read_and_the_renewal_is_never_overwritten(
        mod, shop, open_store):
    """The operator cancels from another connection just before the answer's
    second statement: if the answer reads, then writes, without holding the
    row, the cancel commits in between (or waits and gives up, if it does)."""
    claim = claims.claim(shop, "a-holder", ttl=30)
    attempts = []

    def operator_cancels():
        rival = open_store()
        rival.raw.execute("SET lock_timeout = 300")
        try:
            fence.cancel(rival, claim.id)
            attempts.append("cancelled")
        except sqlite3.OperationalError:  # locked: the answer holds the row
            attempts.append(None)

    try:
        renewed = mod.renew(Watched(shop, operator_cancels), claim, 60)
    except sqlite3.OperationalError:
        renewed = "gave up"  # the answer's own wait ran out: the rows tell
    found = dict(shop.execute("SELECT status, expires FROM work").fetchone())
    if attempts == ["cancelled"]:
        assert (found["status"], found["expires"]) == ("CANCELLED", None), (
            "the renewal wrote a lease onto work the operator had cancelled")
        assert renewed in (None, "gave up"), (
            "the renewal reported a lease on work the operator had cancelled:"
            f" renew answered {renewed}")
    else:
        assert found["status"] == "RUNNING", (
            "the answer held the row (the operator's cancel waited), and the"
            f" work is {found['status']!r}, not RUNNING")
        assert found["expires"] == renewed, (
            f"renew answered {renewed}, and the row's lease ends {found['expires']}")


def test_a_renewal_that_waited_for_the_row_counts_from_when_it_lands(
        mod, shop, open_store):
    """Another writer holds the row (updated, not committed); the renewal
    waits behind it for over a second; then the writer commits. The new lease
    is ``ttl`` from the instant the renewal is written, not from the instant
    it started waiting (a clock read before the lock, or ``now()``)."""
    claim = claims.claim(shop, "a-holder", ttl=30)
    rival = open_store()
    rival.raw.execute("BEGIN")
    rival.raw.execute("UPDATE work SET expires = expires WHERE id = %s", (claim.id,))
    renewed = []
    renewer = threading.Thread(
        target=lambda: renewed.append(mod.renew(shop, claim, 60)))
    renewer.start()
    try:
        blocked_behind(rival, renewer, "the renewal waiting for the row")
        waiting_since = store.now(rival)
        wait_until(lambda: store.now(rival) > waiting_since + 1.0, 10,
                   what="a second of waiting, by the database's clock")
        released = store.now(rival)
    finally:
        rival.raw.execute("COMMIT")
        renewer.join(30)
    assert len(renewed) == 1 and renewed[0] is not None, (
        "the live lease, renewed after waiting for the row, was not renewed:"
        f" renew answered {renewed}")
    assert renewed[0] >= released + 60, (
        f"the lease ends {released + 60 - renewed[0]:.2f} s early: counted from"
        " before the wait")
    assert expires(shop) == renewed[0], (
        f"renew answered {renewed[0]}, and the row's lease ends {expires(shop)}")
