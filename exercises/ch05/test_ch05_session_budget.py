"""Grades exercise 05.2 (session_budget.py)."""

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse import claims, control, store
from crashcourse.claims import fence
from crashcourse.store import connect, count_rows, opened
from crashcourse.waiting import wait_until

CEILING = 1000
T_PAST = 1_700_000_000.0  # long before the real clock: a lease from then is over


@pytest.fixture
def mod(answer):
    return answer("ch05", "session_budget")


def queued(path, mod):
    with opened(path) as conn:
        mod.install(conn)
        claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
        claims.enqueue(conn, "mail:sugar", "back-office", "Restock sugar")
    return path


@pytest.fixture
def db(tmp_path, mod):
    return queued(tmp_path / "shop.db", mod)


def both_claimed(conn):
    first = claims.claim(conn, "w1", ttl=30)
    second = claims.claim(conn, "w2", ttl=30)
    assert first and second and first.session != second.session, (
        "the set-up could not claim flour and sugar for two sessions: has"
        f" install() changed the work table? {first!r} {second!r}")
    return first, second


def total(conn):
    row = conn.execute("SELECT coalesce(sum(amount_cents), 0) FROM reservations")
    return row.fetchone()[0]


def test_only_the_affordable_reservation_is_admitted(mod, db):
    with opened(db) as conn:
        flour, sugar = both_claimed(conn)
        assert mod.reserve(conn, flour, "key-flour", 600, CEILING) is True, (
            "600 of an empty 1,000 account was refused: reserve() must answer"
            " True when the reservation fits")
        assert mod.reserve(conn, sugar, "key-sugar", 600, CEILING) is False, (
            "a second 600 was admitted beside the first: the ceiling must count"
            " every session's reservations, not only this session's")
        assert mod.reserve(conn, sugar, "key-sugar-small", 400, CEILING) is True, (
            "400 that exactly fills the 1,000 ceiling was refused: the ceiling"
            " itself is allowed (<=, not <)")
        assert total(conn) == CEILING, (
            f"the reservations table sums to {total(conn)}, not {CEILING}: a"
            " refused reservation left a row, or an admitted one wrote none")
        kept = conn.execute(
            "SELECT operation_key, work_id FROM reservations ORDER BY operation_key")
        kept = [tuple(r) for r in kept]
        assert kept == [("key-flour", flour.id), ("key-sugar-small", sugar.id)], (
            "the reservation rows do not name the admitted keys and their work:"
            f" {kept}")


# --- a holder that is no longer current, each way it can stop being so -------


def superseded(conn, claim):
    conn.execute("UPDATE work SET expires = :past WHERE id = :id",
                 {"past": T_PAST, "id": claim.id})
    assert claims.claim(conn, claim.owner, ttl=30, work_id=claim.id) is not None, (
        "the set-up could not take the lapsed work over (a new generation)")


def lapsed(conn, claim):  # its lease ran out and nobody came after it
    conn.execute("UPDATE work SET expires = :past WHERE id = :id",
                 {"past": T_PAST, "id": claim.id})


def just_lapsed(conn, claim):  # its lease ended a moment ago
    conn.execute("UPDATE work SET expires = :now WHERE id = :id",
                 {"now": time.time(), "id": claim.id})


def finished(conn, claim):  # it finished its work and holds nothing now
    fence.finish(conn, claim, claims.DONE, "ordered")


def cancelled(conn, claim):
    fence.cancel(conn, claim.id)


def paused(conn, claim):
    control.set_paused(conn, True)


@pytest.mark.parametrize("stale", [superseded, lapsed, just_lapsed,
                                   finished, cancelled, paused],
                         ids=lambda f: f.__name__)
def test_a_holder_that_is_not_current_reserves_nothing(mod, db, stale):
    with opened(db) as conn:
        flour, _ = both_claimed(conn)
        stale(conn, flour)
        with pytest.raises(fence.StaleClaim):
            said = mod.reserve(conn, flour, "key-flour", 100, CEILING)
            pytest.fail(f"a holder that was {stale.__name__} was not refused with"
                        f" StaleClaim: reserve answered {said!r}")
        assert count_rows(conn, "reservations") == 0, (
            f"a holder that was {stale.__name__} still wrote a reservation row:"
            " the fence must be checked in the same transaction, before the"
            " insert")


def test_a_lease_that_ran_out_on_the_clock_reserves_nothing(mod, db):
    """The holder is paused past its lease, the row untouched: nothing rewrote
    ``expires``, nobody came after it; the test waits for the lease to end by
    the store's clock. When the holder resumes, its reservation is refused:
    the fence judges the lease by the clock, not by an instant the answer
    picks (``now=claim.expires - 1`` is inside the lease by the claim's own
    count, forever)."""
    with opened(db) as conn:
        flour = claims.claim(conn, "w1", ttl=0.5)
        wait_until(lambda: store.now(conn) > flour.expires, timeout=30,
                   what="the flour lease run out")
        with pytest.raises(fence.StaleClaim):
            said = mod.reserve(conn, flour, "key-flour", 100, CEILING)
            pytest.fail("a holder whose lease ran out on the store's clock was not"
                        f" refused with StaleClaim: reserve answered {said!r}")
        assert count_rows(conn, "reservations") == 0, (
            "a holder whose lease ran out on the clock still wrote a"
            " reservation: the fence must judge the lease by the store's clock")
        row = claims.work_row(conn, flour.id)
        found = (row["status"], row["generation"], row["expires"])
        assert found == (claims.RUNNING, 1, flour.expires), (
            "reserve() rewrote the work row (status, generation, expires ="
            f" {found}): the fence reads the claim, it never renews or changes it")


def test_a_lease_that_ran_out_and_was_taken_over_reserves_nothing(mod, db):
    """The same pause, and a replacement claims the work on the real clock
    once the lease is over: the resumed holder is refused, the replacement
    reserves."""
    with opened(db) as conn:
        flour = claims.claim(conn, "w1", ttl=0.5)
        wait_until(lambda: store.now(conn) > flour.expires, timeout=30,
                   what="the flour lease run out")
        taken = claims.claim(conn, "w2", ttl=30, work_id=flour.id)
        assert taken is not None and taken.generation == 2, (
            f"the set-up's replacement did not get generation 2: {taken!r}")
        with pytest.raises(fence.StaleClaim):
            said = mod.reserve(conn, flour, "key-flour", 600, CEILING)
            pytest.fail("the old holder, replaced at generation 2, was not refused"
                        f" with StaleClaim: reserve answered {said!r}")
        assert mod.reserve(conn, taken, "key-flour-2", 600, CEILING) is True, (
            "the replacement (generation 2) was refused its 600: the old"
            " holder's refused attempt must leave nothing that counts")
        kept = [tuple(r) for r in conn.execute(
            "SELECT operation_key, amount_cents FROM reservations")]
        assert kept == [("key-flour-2", 600)], (
            f"the reservations are {kept}, not only the replacement's 600")


def test_a_finished_order_still_holds_its_reservation(mod, db):
    """The ceiling counts every reservation committed, also those of work that
    has finished since (the money is spent): finishing the flour request does
    not give its 600 back to the account."""
    with opened(db) as conn:
        flour, sugar = both_claimed(conn)
        assert mod.reserve(conn, flour, "key-flour", 600, CEILING) is True, (
            "600 of an empty 1,000 account was refused")
        fence.finish(conn, flour, claims.DONE, "ordered")
        assert mod.reserve(conn, sugar, "key-sugar", 600, CEILING) is False, (
            "finished work's 600 was given back to the account: the ceiling"
            " must count every committed reservation, finished work's too")
        assert mod.reserve(conn, sugar, "key-sugar-small", 400, CEILING) is True, (
            "400 that exactly fills the ceiling beside finished work's 600 was"
            " refused")
        assert total(conn) == CEILING, (
            f"the reservations sum to {total(conn)}, not {CEILING}")


@pytest.mark.parametrize(("amount", "refusal"), [
    (0, ValueError), (-5, ValueError), (True, TypeError), (2.5, TypeError)])
def test_bad_amount_is_refused_before_writing(mod, db, amount, refusal):
    with opened(db) as conn:
        flour, _ = both_claimed(conn)
        with pytest.raises(refusal):
            said = mod.reserve(conn, flour, "key", amount, CEILING)
            pytest.fail(f"the bad amount {amount!r} was not refused with a"
                        f" {refusal.__name__}: reserve answered {said!r}")
        assert count_rows(conn, "reservations") == 0, (
            f"the bad amount {amount!r} was refused only after a row was written")


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ceiling=st.integers(min_value=1, max_value=3000),
       asks=st.lists(st.tuples(st.booleans(), st.integers(min_value=1,
                                                          max_value=1500)),
                     max_size=8))
def test_any_sequence_of_asks_is_admitted_by_the_account(mod, ceiling, asks):
    """Both sessions ask in turn, any amounts: each is admitted exactly when
    what the account already reserved, plus it, fits the ceiling."""
    with tempfile.TemporaryDirectory() as folder:
        path = queued(Path(folder) / "shop.db", mod)
        with opened(path) as conn:
            flour, sugar = both_claimed(conn)
            reserved = 0
            for n, (from_flour, amount) in enumerate(asks):
                claim = flour if from_flour else sugar
                fits = reserved + amount <= ceiling
                said = mod.reserve(conn, claim, f"key-{n}", amount, ceiling)
                assert said is fits, (
                    f"ask {n + 1} ({amount} with {reserved} of {ceiling} reserved)"
                    f" answered {said!r}, not {fits}: admit exactly when what is"
                    " reserved plus the ask fits the ceiling")
                reserved += amount if fits else 0
            assert total(conn) == reserved, (
                f"the reservations sum to {total(conn)}, not the {reserved}"
                " admitted: a refused ask left a row, or an admitted one none")


# --- a rival reservation at every statement boundary -------------------------


def statements_of(mod, db) -> int:
    """How many statements one reservation runs, on a copy of the shop."""
    seen = []
    with opened(db) as conn:
        flour, _ = both_claimed(conn)
        conn.set_trace_callback(seen.append)
        mod.reserve(conn, flour, "a", 600, CEILING)
        conn.set_trace_callback(None)
    return len(seen)


def race_at(mod, db, boundary: int) -> dict:
    """Flour reserves 600 on one connection; just before its ``boundary``-th
    statement, sugar reserves 600 whole on another (after flour, if flour's
    write lock kept it out)."""
    with opened(db) as conn:
        flour, sugar = both_claimed(conn)
    mine, theirs = connect(db), connect(db, busy_timeout_ms=50)
    ran = {"count": 0, "locked_out": False}

    def before(sql: str) -> None:
        ran["count"] += 1
        if ran["count"] != boundary:
            return
        try:
            ran["sugar"] = mod.reserve(theirs, sugar, "b", 600, CEILING)
        except sqlite3.OperationalError:  # flour holds the write lock
            ran["locked_out"] = True

    mine.set_trace_callback(before)
    try:
        ran["flour"] = mod.reserve(mine, flour, "a", 600, CEILING)
    finally:
        mine.set_trace_callback(None)
    if ran["locked_out"] or "sugar" not in ran:
        ran["sugar"] = mod.reserve(theirs, sugar, "b", 600, CEILING)
    ran["total"] = total(mine)
    mine.close()
    theirs.close()
    return ran


def test_a_rival_at_any_statement_cannot_get_both_through(mod, tmp_path):
    """Two sessions, 600 each against 1,000. The other session's whole
    reservation runs just before each statement of yours in turn (a rival
    your write lock keeps out runs after you): one of the two is admitted,
    never both, whichever statement it lands before."""
    count = statements_of(mod, queued(tmp_path / "probe.db", mod))
    assert count >= 2, (
        f"one reservation ran {count} SQL statement(s): reading the account and"
        " writing the row cannot both be in it")
    for boundary in range(1, count + 1):
        ran = race_at(mod, queued(tmp_path / f"at-{boundary}.db", mod), boundary)
        answers = sorted([ran["flour"], ran["sugar"]])
        assert answers != [True, True], (
            f"the rival's reservation was admitted beside yours when it ran"
            f" before your statement {boundary} of {count}: the account was"
            " read outside the write lock, or without the other session's rows"
            " (take the lock, BEGIN IMMEDIATE, before reading every"
            f" reservation); answers flour={ran['flour']!r}"
            f" sugar={ran['sugar']!r}")
        assert answers == [False, True], (
            f"with the rival before your statement {boundary} of {count},"
            f" neither 600 was admitted (flour={ran['flour']!r},"
            f" sugar={ran['sugar']!r}): one of them fits and must get through")
        assert ran["total"] == 600, (
            f"with the rival before your statement {boundary} of {count}, the"
            f" reservations sum to {ran['total']}, not the one admitted 600")


# --- two real processes -------------------------------------------------------

CHILD = r"""
import dataclasses, importlib.util, json, sys
from crashcourse.claims import Claim
from crashcourse.store import opened

path, db, claim, key = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
spec = importlib.util.spec_from_file_location("answer_in_child", path)
answer = importlib.util.module_from_spec(spec)
sys.modules["answer_in_child"] = answer
spec.loader.exec_module(answer)
with opened(db) as conn:
    print("ready", flush=True)
    sys.stdin.readline()  # the parent releases both children together
    admitted = answer.reserve(conn, Claim(**claim), key, 600, 1000)
print("answer " + json.dumps(admitted), flush=True)
"""


def reserve_in_child(mod, db, claim, key) -> subprocess.Popen:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, mod.__file__, str(db),
         json.dumps(dataclasses.asdict(claim)), key],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    line = child.stdout.readline()  # "ready", or "" if it died first
    if line.strip() != "ready":
        child.kill()
        _, err = child.communicate(timeout=30)
        pytest.fail(f"the child never got ready: {line!r} {err[-2000:]}")
    return child


def test_two_processes_cannot_both_get_through(mod, db):
    """Flour and sugar reserve 600 each from two real processes, released
    together by the parent once both have connected: each process has its
    own memory, so only what is in the database can keep the second out. The
    reservations table decides: exactly one row; and each process must have
    answered (a crash is not a refusal)."""
    with opened(db) as conn:
        flour, sugar = both_claimed(conn)
    children = [reserve_in_child(mod, db, flour, "key-flour"),
                reserve_in_child(mod, db, sugar, "key-sugar")]
    for child in children:  # the barrier: both are connected and waiting
        child.stdin.write("go\n")
        child.stdin.flush()
    answers = []
    for child in children:
        out, err = child.communicate(timeout=60)
        said = [line for line in out.splitlines() if line.startswith("answer ")]
        assert child.returncode == 0 and said, f"a child did not answer: {err[-2000:]}"
        answers.append(json.loads(said[-1].removeprefix("answer ")))
    with opened(db) as conn:
        kept = [tuple(r) for r in conn.execute(
            "SELECT operation_key, amount_cents FROM reservations")]
        assert total(conn) == 600 and len(kept) == 1, (
            "two processes released together left the reservations"
            f" {kept}, not one 600: only a lock in the database keeps the second"
            " out (each process has its own memory)")
    admitted = [key for key, said in zip(("key-flour", "key-sugar"), answers,
                                         strict=True) if said is True]
    assert [key for key, _ in kept] == admitted, (
        f"the processes said {admitted} were admitted, the table keeps"
        f" {[key for key, _ in kept]}: reserve() answered something it did not"
        " commit")
