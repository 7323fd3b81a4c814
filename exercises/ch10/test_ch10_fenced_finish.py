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


def finishes(mod, conn, claim, outcome, expected: bool, why: str) -> None:
    """``finish`` answers ``expected``; ``why`` says the mistake if not."""
    said = mod.finish(conn, claim, outcome)
    assert said is expected, (
        f"{why}: finish({claim.owner!r}, generation {claim.generation},"
        f" {outcome!r}) answered {said!r}")


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
    finishes(mod, shop, claim, "6 sacks ordered", True,
             "the live holder's write was refused")
    after = store.now(shop)
    found = row(shop)
    got = (found["status"], found["outcome"], found["expires"])
    assert got == ("DONE", "6 sacks ordered", None), (
        "the live holder's finish did not leave the row DONE with its outcome"
        f" and the lease cleared: (status, outcome, expires) {got}")
    assert before <= found["finished"] <= after, (  # the database's now
        "the finish was not stamped by the database's clock during the call:"
        f" finished {found['finished']}, the database's clock read {before}"
        f" before and {after} after")


def test_it_is_one_update_and_nothing_else(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=60)
    watched = Watched(shop)
    finishes(mod, watched, claim, "6 sacks ordered", True,
             "the live holder's write was refused")
    assert len(watched.statements) == 1, (
        f"the finish took {len(watched.statements)} statements: a read and a"
        " write leave a gap another writer can commit in; the fence belongs in"
        f" the one UPDATE's WHERE clause; statements {watched.statements}")
    first = WRITES.match(watched.statements[0])
    assert first is not None and first.group(1).upper() == "UPDATE", (
        "the finish's one statement is not an UPDATE:"
        f" {watched.statements[0]!r}")


def test_a_superseded_holder_is_refused_and_changes_nothing(mod, shop):
    old = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, old)
    new = claims.claim(shop, "b-taker", ttl=60)
    assert new.generation == 2, (
        "the grader's world, not your answer: the new claim was to be"
        f" generation 2, and is {new.generation}")
    finishes(mod, shop, old, "60 sacks ordered", False,
             "the superseded holder's write was let in over b-taker's claim")
    found = row(shop)
    got = (found["status"], found["owner"], found["generation"], found["outcome"])
    assert got == ("RUNNING", "b-taker", 2, None), (
        "the superseded holder's refused finish changed the row:"
        f" (status, owner, generation, outcome) {got}")
    finishes(mod, shop, new, "6 sacks ordered", True,
             "the new holder's live claim was refused")


def test_a_lapsed_lease_is_refused_though_nobody_took_the_work(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, claim)
    finishes(mod, shop, claim, "6 sacks ordered", False,
             "the holder wrote after its lease ended (nobody had taken the work,"
             " but anyone may, any moment): compare the lease with the"
             " database's clock, not only the generation")
    got = (row(shop)["status"], row(shop)["outcome"])
    assert got == ("RUNNING", None), (
        f"the lapsed holder's refused finish changed the row: {got}")


def test_another_owner_with_the_same_generation_is_refused(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=60)
    finishes(mod, shop, replace(claim, owner="impostor"), "x", False,
             "a claim under another owner with the row's generation was let in:"
             " the owner is part of the fence")
    finishes(mod, shop, replace(claim, generation=2), "x", False,
             "a claim naming a generation the row does not have was let in")
    outcome = row(shop)["outcome"]
    assert outcome is None, f"a refused finish wrote the outcome {outcome!r}"


def test_a_finished_claim_cannot_finish_twice(mod, shop):
    claim = claims.claim(shop, "a-holder", ttl=60)
    finishes(mod, shop, claim, "first", True, "the live holder's write was refused")
    finishes(mod, shop, claim, "second", False,
             "a finished claim finished again: only RUNNING work can finish")
    outcome = row(shop)["outcome"]
    assert outcome == "first", (
        f"the second finish overwrote the first outcome: now {outcome!r}")


@pytest.mark.parametrize("skew", [3600, -3600],
                         ids=["database-an-hour-ahead", "database-an-hour-behind"])
def test_the_databases_clock_decides_not_the_workers(mod, shop, db_clock, skew):
    """The DATABASE's clock really differs from the worker's host clock (the
    grader's shifted ``clock_timestamp()``): nothing in this process is
    patched, so every clock the worker could read is an hour off."""
    db_clock.shift(skew)
    live = claims.claim(shop, "a-holder", ttl=60)
    clock = ("the lease was compared with the worker's clock, an hour off the"
             f" database's ({skew:+d} s): every lease was written by the"
             " database's clock, compare with that (clock_timestamp())")
    finishes(mod, shop, live, "written while live", True,
             f"the live holder was refused: {clock}")
    claims.enqueue(shop, "phone:restock-oil", "counter-2", "Restock oil")
    lapsed = claims.claim(shop, "a-holder", ttl=0.3)
    lapse(shop, lapsed)
    finishes(mod, shop, lapsed, "written after its lease", False,
             f"the holder wrote after its lease: {clock}")
    outcome = claims.work_row(shop, lapsed.id)["outcome"]
    assert outcome is None, f"the refused finish wrote the outcome {outcome!r}"


def test_the_instant_a_lease_ends_belongs_to_the_next_claimer(mod, shop, db_clock):
    """The database's clock stopped at the lease's exact end: a claimer may
    take the work then (its pick is ``expires <= now``), so the holder may not."""
    ends = float(int(store.now(shop)) + 100)
    db_clock.freeze(ends - 60)
    claim = claims.claim(shop, "a-holder", ttl=60)
    world = "the grader's world, not your answer: "
    assert claim.expires == ends, (
        f"{world}the lease was to end at {ends}, and ends at {claim.expires}")
    db_clock.freeze(ends - 0.001)
    still = claims.claim(shop, "a-holder", ttl=60, work_id=claim.id)
    assert still is None, (  # a millisecond before the end: nobody may take it
        f"{world}the work was claimed a millisecond before the lease ended")
    db_clock.freeze(ends)
    finishes(mod, shop, claim, "6 sacks ordered", False,
             "at the lease's very end the holder was let in, while a claimer may"
             " take the work then: the lease is live while expires > now, not >=")
    outcome = claims.work_row(shop, claim.id)["outcome"]
    assert outcome is None, f"the refused finish wrote the outcome {outcome!r}"
    taken = claims.claim(shop, "b-taker", ttl=60, work_id=claim.id)
    assert taken is not None and taken.generation == 2, (
        f"{world}at the lease's end b-taker was to claim generation 2: {taken}")


def test_every_part_of_the_fence_refuses_on_its_own(mod, shop):
    """A row that names this claim, with a live lease, but is not RUNNING (a
    tool set it BLOCKED and left the lease on): the status alone refuses."""
    claim = claims.claim(shop, "a-holder", ttl=60)
    shop.execute("UPDATE work SET status = 'BLOCKED' WHERE id = :id", {"id": claim.id})
    finishes(mod, shop, claim, "6 sacks ordered", False,
             "the holder's DONE landed on BLOCKED work whose lease was left on:"
             " the status is part of the fence, on its own")
    found = row(shop)
    got = (found["status"], found["outcome"])
    assert got == ("BLOCKED", None), (
        f"the refused finish changed the BLOCKED row: (status, outcome) {got}")


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
    assert began_waiting < claim.expires, (
        "the grader's world, not your answer: the write was to start waiting"
        f" inside the lease (ends {claim.expires}), and began at {began_waiting}")
    assert landed == [False], (
        "a write that waited for the row while the lease ended was let in:"
        " judged by the instant it began (now()), not the instant it lands"
        f" (clock_timestamp()); finish answered {landed}")
    got = (row(shop)["status"], row(shop)["outcome"])
    assert got == ("RUNNING", None), (
        f"the write judged after its lease changed the row: (status, outcome) {got}")


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
    got = (found["status"], found["outcome"])
    if attempts == ["cancelled"]:
        assert got == ("CANCELLED", None), (
            "the holder's write landed over the operator's cancel, committed"
            " between the answer's read and its write: put the fence in the one"
            f" UPDATE's WHERE clause; (status, outcome) {got}")
    else:
        assert got == ("DONE", "6 sacks ordered"), (
            "the answer held the row (the operator's cancel waited) and its own"
            f" write did not land: (status, outcome) {got}")
