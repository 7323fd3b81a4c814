"""Grades exercise 10.2 (which_lands.py): your predictions, then the runtime's
own fence on a PostgreSQL store, replaying each history at its instants."""

import random

import pytest

from crashcourse import claims
from crashcourse.claims import fence
from crashcourse.store import connect

T = 1_800_000_000.0  # the database's clock at the start of each history
# (kind, fields...) in the order the database saw them, and the verdicts.
HISTORIES = {
    "cut_off_then_taken_over": (
        [("claimed", "a", T, 30), ("claimed", "b", T + 31, 30),
         ("wrote", "a", 1, T + 40, T + 20), ("wrote", "b", 2, T + 41, T + 41)],
        [False, True]),
    "a_fast_clock_on_a_live_claim": (
        [("claimed", "a", T, 30), ("wrote", "a", 1, T + 10, T + 3610)],
        [True]),
    "lapsed_and_nobody_took_it": (
        [("claimed", "a", T, 30), ("wrote", "a", 1, T + 45, T + 20)],
        [False]),
    "cancelled_in_the_middle_of_a_lease": (
        [("claimed", "a", T, 60), ("cancelled", T + 10),
         ("wrote", "a", 1, T + 20, T + 20)],
        [False]),
    "the_same_worker_claims_again": (
        [("claimed", "a", T, 10), ("claimed", "a", T + 15, 30),
         ("wrote", "a", 1, T + 20, T + 20), ("wrote", "a", 2, T + 21, T + 21)],
        [False, True]),
    "on_time_then_late": (
        [("claimed", "a", T, 30), ("wrote", "a", 1, T + 5, T + 5),
         ("claimed", "b", T + 35, 30), ("wrote", "a", 1, T + 36, T + 6),
         ("wrote", "b", 2, T + 37, T + 37)],
        [True, False, True]),
}


@pytest.fixture
def mod(answer):
    return answer("ch10", "which_lands")


@pytest.fixture
def conn(store_url):
    opened = connect(store_url)
    fence.install(opened)
    yield opened
    opened.close()


def events(mod, history):
    """The history as the answer's own event classes."""
    kinds = {"claimed": mod.Claimed, "cancelled": mod.Cancelled, "wrote": mod.Wrote}
    return [kinds[kind](*fields) for kind, *fields in history]


def replay(conn, history, origin: str) -> list[bool]:
    """Play ``history`` on the runtime, at its instants, on a new piece of
    work: for each write, whether ``fence.observe`` let it in."""
    work = claims.enqueue(conn, origin, origin, "Restock flour")
    held, verdicts = {}, []
    for kind, *fields in history:
        if kind == "claimed":
            owner, at, ttl = fields
            granted = claims.claim(conn, owner, ttl=ttl, now=at, work_id=work)
            assert granted is not None, f"not a history: {owner} could not claim"
            held[granted.generation] = granted
        elif kind == "cancelled":
            fence.cancel(conn, work, now=fields[0])
        else:
            owner, generation, at, _ = fields
            assert held[generation].owner == owner
            try:
                fence.observe(conn, held[generation], {"text": "a line"}, now=at)
                verdicts.append(True)
            except fence.StaleClaim:
                verdicts.append(False)
    return verdicts


def random_history(rng: random.Random) -> list:
    """Claims when a lease is over, at most one cancel, writes by holders
    under any claim they were granted, their clocks off by up to an hour."""
    at, history, owners, expires, cancelled = T, [], [], T, False
    for _ in range(rng.randint(3, 9)):
        at += rng.choice([1, 5, 20, 40])
        roll = rng.random()
        if not cancelled and (not owners or (roll < 0.35 and at > expires)):
            owner, ttl = rng.choice("ab"), rng.choice([10, 30])
            history.append(("claimed", owner, at, ttl))
            owners.append(owner)
            expires = at + ttl
        elif not cancelled and roll > 0.9:
            history.append(("cancelled", at))
            cancelled = True
        else:
            generation = rng.randint(1, len(owners))
            skew = rng.choice([-3600, -30, 0, 30, 3600])
            history.append(("wrote", owners[generation - 1], generation, at,
                            at + skew))
    return history


@pytest.mark.parametrize("name", HISTORIES)
def test_your_predictions_for_the_written_out_histories(mod, name):
    history, expected = HISTORIES[name]
    assert mod.lands(events(mod, history)) == expected


@pytest.mark.parametrize("name", HISTORIES)
def test_then_run_the_runtime_agrees_with_you(mod, conn, name):
    history, expected = HISTORIES[name]
    ran = replay(conn, history, f"history:{name}")
    assert ran == expected  # what the fence did
    assert mod.lands(events(mod, history)) == ran


def test_forty_random_histories_judged_as_the_fence_judges_them(mod, conn):
    rng = random.Random(10)
    for number in range(40):
        history = random_history(rng)
        ran = replay(conn, history, f"random:{number}")
        assert mod.lands(events(mod, history)) == ran, history
