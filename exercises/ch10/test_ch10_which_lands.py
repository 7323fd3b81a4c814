"""Grades exercise 10.2 (which_lands.py): your predictions, then the runtime's
own fence on a PostgreSQL store, replaying each history at its instants."""

import itertools
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse import claims
from crashcourse.claims import fence

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
    "another_worker_presents_the_live_generation": (
        [("claimed", "a", T, 30), ("wrote", "b", 1, T + 5, T + 5),
         ("wrote", "a", 1, T + 6, T + 6)],
        [False, True]),
    "at_the_instant_the_lease_ends": (
        [("claimed", "a", T, 30), ("wrote", "a", 1, T + 30, T + 30),
         ("claimed", "b", T + 30, 30), ("wrote", "b", 2, T + 30, T + 30)],
        [False, True]),
}


@pytest.fixture
def mod(answer):
    return answer("ch10", "which_lands")


@pytest.fixture
def conn(open_store):
    opened = open_store()
    fence.install(opened)
    return opened


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
            # the claim as this writer presents it: its generation, its name
            offered = replace(held[generation], owner=owner)
            try:
                fence.observe(conn, offered, {"text": "a line"}, now=at)
                verdicts.append(True)
            except fence.StaleClaim:
                verdicts.append(False)
    return verdicts


@st.composite
def histories(draw) -> list:
    """Claims granted when (or after) the lease ends, at most one cancel, and
    writes offered by ANY of three workers under ANY generation granted so
    far (a holder, a superseded holder, one presenting another's number),
    arriving on, before or after a lease's end, their own clocks off by up to
    an hour."""
    at, history, granted, expires, cancelled = T, [], 0, T, False
    for _ in range(draw(st.integers(3, 10))):
        at += draw(st.sampled_from([1, 5, 10, 20, 30, 40]))
        kind = draw(st.sampled_from(["claim", "write", "write", "cancel"]))
        if not granted or (kind == "claim" and not cancelled and at >= expires):
            ttl = draw(st.sampled_from([10, 20, 30]))
            history.append(("claimed", draw(st.sampled_from("abc")), at, ttl))
            granted, expires = granted + 1, at + ttl
        elif kind == "cancel" and not cancelled:
            history.append(("cancelled", at))
            cancelled = True
        else:
            skew = draw(st.sampled_from([-3600, -30, 0, 30, 3600]))
            history.append(("wrote", draw(st.sampled_from("abc")),
                            draw(st.integers(1, granted)), at, at + skew))
    return history


@pytest.mark.parametrize("name", HISTORIES)
def test_your_predictions_for_the_written_out_histories(mod, name):
    history, expected = HISTORIES[name]
    said = mod.lands(events(mod, history))
    assert said == expected, (
        f"for the history {name!r} you predicted {said} land, the fence lets"
        f" {expected} land: a write lands when its generation is the current"
        " one and the work is not cancelled, judged by the store's clock, not"
        " the writer's")


@pytest.mark.parametrize("name", HISTORIES)
def test_then_run_the_runtime_agrees_with_you(mod, conn, name):
    history, expected = HISTORIES[name]
    ran = replay(conn, history, f"history:{name}")
    assert ran == expected, (  # what the fence did
        f"the runtime let {ran} land for {name!r}, not the {expected} written"
        " out: the grader's history is wrong, not your answer")
    said = mod.lands(events(mod, history))
    assert said == ran, (
        f"for {name!r} you say {said} land, the runtime's fence let {ran} land")


WORK = itertools.count()  # a new piece of work for every drawn history


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories())
def test_drawn_histories_are_judged_as_the_fence_judges_them(mod, conn, history):
    ran = replay(conn, history, f"drawn:{next(WORK)}")
    said = mod.lands(events(mod, history))
    assert said == ran, (
        f"for the drawn history {history} you say {said} land, the runtime's"
        f" fence let {ran} land")
