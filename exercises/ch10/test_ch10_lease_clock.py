"""Grades exercise 10.3 (lease_clock.py) on a real PostgreSQL server, with
workers whose clocks are an hour off."""

import math
import time
from unittest import mock

import pytest

from crashcourse import claims, store
from crashcourse.claims import fence
from crashcourse.store import connect
from crashcourse.waiting import wait_until

HOUR = 3600.0


@pytest.fixture
def mod(answer):
    return answer("ch10", "lease_clock")


@pytest.fixture
def shop(store_url):
    conn = connect(store_url)
    fence.install(conn)
    claims.enqueue(conn, "phone:restock-flour", "counter", "Restock flour")
    yield conn
    conn.close()


def expires(conn) -> float | None:
    return conn.execute("SELECT expires FROM work").fetchone()[0]


def lapse(conn, claim) -> None:
    """Wait until the SERVER's clock has passed ``claim``'s lease (bounded)."""
    wait_until(lambda: store.now(conn) > claim.expires, 10,
               what="the server's clock past the lease")


def skewed(by: float):
    """The worker's host clock, ``by`` seconds off (``time.time`` patched)."""
    real = time.time
    return mock.patch("time.time", lambda: real() + by)


def test_a_renewal_ends_the_lease_ttl_seconds_from_the_databases_now(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=5)
    before = store.now(shop)
    renewed = mod.renew(shop, claim, 60)
    after = store.now(shop)
    assert before + 60 <= renewed <= after + 60
    assert expires(shop) == renewed  # what every host will read


@pytest.mark.parametrize("skew", [HOUR, -HOUR], ids=["an-hour-fast", "an-hour-slow"])
def test_a_workers_clock_an_hour_off_changes_nothing(mod, shop, skew):
    claim = claims.claim(shop, "a-holder", ttl=5)
    before = store.now(shop)
    with skewed(skew):
        renewed = mod.renew(shop, claim, 60)
    assert renewed is not None
    assert before + 60 <= renewed <= store.now(shop) + 60
    # another host, its clock right, sees a live lease: it may not take over
    assert claims.claim(shop, "b-taker", ttl=60) is None


def test_a_lapsed_lease_is_never_brought_back(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, claim)
    was = expires(shop)
    assert mod.renew(shop, claim, 60) is None
    assert expires(shop) == was
    taken = claims.claim(shop, "b-taker", ttl=60)  # the work is free to take
    assert taken is not None and taken.generation == 2


def test_a_superseded_holder_cannot_renew_the_new_holders_lease(mod, shop):
    old = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, old)
    new = claims.claim(shop, "b-taker", ttl=30)
    was = expires(shop)
    assert mod.renew(shop, old, 600) is None
    assert expires(shop) == was
    assert mod.renew(shop, new, 60) is not None


@pytest.mark.parametrize("ttl", [0, -5, math.nan, math.inf, 7200, "60"],
                         ids=["zero", "negative", "nan", "inf", "two-hours", "text"])
def test_a_bad_ttl_is_refused_and_changes_nothing(mod, shop, ttl):
    claim = claims.claim(shop, "a-holder", ttl=30)
    was = expires(shop)
    with pytest.raises((ValueError, TypeError)):
        mod.renew(shop, claim, ttl)
    assert expires(shop) == was
