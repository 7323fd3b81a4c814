"""A claim against a rival at every statement boundary (chapter 05).

The eight-process race of chapter 05 shows what the scheduler happened to do.
Here nothing is left to it: one connection claims, and just before each of
its statements in turn (BEGIN, every read, every write, COMMIT) a second
connection runs a whole claim of its own. Whatever the boundary, one item
must never be granted twice: the chapter's ``claims.claim`` holds, and its
negative control, ``shop_worker.claim_read_first`` (the row chosen before
the write lock), must lose at some boundary, or the test could not see a
double claim at all. SQLite alone: these are the statements of SQLite's own
claim SQL; a server's claimers side by side are tests/claims/test_postgres.py's
and the race of tests/claims/test_concurrency.py, on both backends.
"""

from __future__ import annotations

import sqlite3

import pytest

from crashcourse import claims
from crashcourse.claims import fence
from crashcourse.store import connect, opened
from crashcourse.workers.shop_worker import claim_read_first

TTL = 60.0  # nothing expires while a test runs


def statements(db, take) -> list[str]:
    """The statements one claim runs on a fresh copy of the queue, in order."""
    seen: list[str] = []
    with opened(db) as conn:
        conn.set_trace_callback(seen.append)
        take(conn, "probe", ttl=TTL)
        conn.set_trace_callback(None)
    return seen


def queue(db) -> None:
    with opened(db) as conn:
        fence.install(conn)
        claims.enqueue(conn, "phone:flour", "counter", "Restock flour")


def race_at(db, take, boundary: int) -> dict:
    """``take`` on one connection; just before its ``boundary``-th statement,
    a rival ``take`` runs whole on another (after, if the lock kept it out)."""
    first, rival = connect(db), connect(db, busy_timeout_ms=50)
    ran = {"count": 0, "rival": None, "locked_out": False}

    def before(sql: str) -> None:
        ran["count"] += 1
        if ran["count"] != boundary:
            return
        try:
            ran["rival"] = take(rival, "rival", ttl=TTL)
        except sqlite3.OperationalError:  # the first one holds the write lock
            ran["locked_out"] = True

    first.set_trace_callback(before)
    try:
        ran["first"] = take(first, "first", ttl=TTL)
    finally:
        first.set_trace_callback(None)
    if ran["locked_out"]:
        ran["rival"] = take(rival, "rival", ttl=TTL)
    first.close()
    rival.close()
    with opened(db) as conn:
        ran["claims"] = [tuple(r) for r in conn.execute(
            "SELECT work_id, generation, owner FROM claims ORDER BY generation")]
    return ran


def boundaries(tmp_path, take) -> range:
    probe = tmp_path / "probe.db"
    queue(probe)
    return range(1, len(statements(probe, take)) + 1)


def test_claim_grants_one_item_once_whatever_the_boundary(tmp_path):
    """Bug: ``claim`` reads (or decides) before BEGIN IMMEDIATE, or commits its
    choice apart from the grant: at some boundary both connections get it."""
    tried = boundaries(tmp_path, claims.claim)
    assert len(tried) >= 4  # BEGIN, the reads, the grant, COMMIT at least
    for boundary in tried:
        db = tmp_path / f"at-{boundary}.db"
        queue(db)
        ran = race_at(db, claims.claim, boundary)
        winners = [c for c in (ran["first"], ran["rival"]) if c is not None]
        assert len(winners) == 1, (boundary, ran["claims"])
        assert [c[1] for c in ran["claims"]] == [1], boundary


def test_the_read_first_mutant_grants_one_item_twice_at_some_boundary(tmp_path):
    """The negative control: with the row chosen outside the lock, a rival
    claim landing between the choice and the grant takes the same item, and
    both connections hold it (two rows in ``claims``)."""
    doubled = []
    for boundary in boundaries(tmp_path, claim_read_first):
        db = tmp_path / f"mutant-{boundary}.db"
        queue(db)
        ran = race_at(db, claim_read_first, boundary)
        if ran["first"] is not None and ran["rival"] is not None:
            doubled.append(boundary)
            assert [c[1] for c in ran["claims"]] == [1, 2]
    assert doubled, "the interleaving never landed in the mutant's gap"


@pytest.mark.parametrize("take", [claims.claim, claim_read_first],
                         ids=["claim", "read_first"])
def test_alone_each_claims_the_item_once(tmp_path, take):
    """The control of the control: without a rival both grant generation 1."""
    db = tmp_path / "alone.db"
    queue(db)
    with opened(db) as conn:
        granted = take(conn, "w", ttl=TTL)
        assert (granted.generation, granted.owner) == (1, "w")
        assert take(conn, "w2", ttl=TTL) is None
