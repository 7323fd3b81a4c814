"""The ordinary claim on a server in ONE round trip (chapter 10, issue 24),
with every rule it kept in four.

``claims.postgres`` runs the ordinary pass as one function installed with
the schema: the store's lock SHARED, the clock, the pick, the session's
try-lock, the grant. These cases count what the client sends (libpq's own
trace of its messages), and hold, from a second real connection, each lock
the function must respect: the store's lock EXCLUSIVE (an operator's cancel
or pause) and one session's advisory lock (another claimer deciding it).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections import Counter

import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed")

from psycopg import pq  # noqa: E402

from crashcourse import claims, control, store  # noqa: E402
from crashcourse.claims import postgres as claims_postgres  # noqa: E402

pytestmark = pytest.mark.postgres_only(
    "a server's round trips, its advisory locks, its function")


@pytest.fixture
def address(store_at):
    at = store_at("trips")
    with store.opened(at) as conn:
        claims.install(conn)
    return at


def queue(conn, sessions: list[str]) -> list[str]:
    return [claims.enqueue(conn, f"phone:{n}", session, "restock")
            for n, session in enumerate(sessions)]


def sent(conn, act) -> Counter:
    """The messages the client sent while ``act()`` ran, by kind (libpq's
    trace: a Query, or a Sync ending an extended query, is a round trip)."""
    fd, path = tempfile.mkstemp()
    try:
        conn.raw.pgconn.trace(fd)
        conn.raw.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            act()
        finally:
            conn.raw.pgconn.untrace()
        with open(path, encoding="utf-8", errors="replace") as trace:
            return Counter(line.split()[2] for line in trace
                           if line.startswith("F\t"))
    finally:
        os.close(fd)
        os.unlink(path)


def round_trips(messages: Counter) -> int:
    return messages["Query"] + messages["Sync"]


def test_an_ordinary_claim_is_one_round_trip(address):
    with store.opened(address) as conn:
        queue(conn, ["s0", "s1", "s2"])
        taken = []
        # the first claim, a claim behind a live holder's session, and none left
        for _ in range(4):
            messages = sent(conn, lambda: taken.append(
                claims.claim(conn, "w", ttl=60)))
            assert round_trips(messages) == 1, messages
        assert [t and t.id for t in taken] == [
            claims.work_id_for(f"phone:{n}") for n in range(3)] + [None]
        # and what it took is in the rows: one claims row each, generation 1
        assert conn.execute("SELECT count(*), max(generation) FROM claims"
                            ).fetchone() == (3, 1)


def test_a_lapsed_lease_and_a_named_turn_are_one_round_trip_too(address):
    with store.opened(address) as conn:
        first, second = queue(conn, ["s0", "s1"])
        gone = claims.claim(conn, "gone", ttl=0.2, now=1_000.0)
        again = []
        messages = sent(conn, lambda: again.append(
            claims.claim(conn, "back", ttl=60, now=1_001.0)))
        assert round_trips(messages) == 1, messages
        assert (again[0].id, again[0].generation) == (gone.id, 2)  # lapsed first
        named = []
        messages = sent(conn, lambda: named.append(
            claims.claim(conn, "named", ttl=60, work_id=second)))
        assert round_trips(messages) == 1, messages
        assert named[0].id == second


def test_a_session_another_claimer_is_deciding_is_passed(address):
    """A second connection holds s0's session lock, as a claimer between its
    pick and its grant would: the claim passes s0 (both its turns) and takes
    s1's, and takes s0's first turn once that lock is gone."""
    with store.opened(address) as conn, store.opened(address) as deciding:
        turns = queue(conn, ["s0", "s0", "s1"])
        deciding.execute("BEGIN")
        deciding.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(:session, :store_lock))",
            {"session": "s0", "store_lock": deciding.store_lock})
        try:
            passed = claims.claim(conn, "w", ttl=60)
            assert passed.id == turns[2]
            assert claims.claim(conn, "w", ttl=60) is None  # s0 still decided
        finally:
            deciding.execute("ROLLBACK")
        assert claims.claim(conn, "w", ttl=60).id == turns[0]
        assert claims.claim(conn, "w", ttl=60) is None  # s0's holder is live
        held = conn.execute("SELECT work_id FROM claims ORDER BY claimed_at"
                            ).fetchall()
        assert [row[0] for row in held] == [turns[2], turns[0]]


def test_a_claim_waits_for_an_operators_exclusive_write(address):
    """An operator's cancel or pause holds the store's lock EXCLUSIVE: the
    one-trip claim waits for it (here until its lock timeout) and takes
    nothing; once the operator commits, it claims."""
    with store.opened(address) as conn, store.opened(address) as operator:
        queue(conn, ["s0"])
        conn.raw.execute("SET lock_timeout = 300")
        with store.immediate(operator):  # EXCLUSIVE, as cancel and pause take it
            with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                claims.claim(conn, "w", ttl=60)
        assert conn.execute("SELECT count(*) FROM claims").fetchone()[0] == 0
        assert claims.claim(conn, "w", ttl=60) is not None


def test_the_pause_flag_stops_the_one_trip_claim(address):
    with store.opened(address) as conn:
        queue(conn, ["s0"])
        control.set_paused(conn, True)
        assert claims.claim(conn, "w", ttl=60) is None
        assert conn.execute("SELECT count(*) FROM claims").fetchone()[0] == 0
        control.set_paused(conn, False)
        assert claims.claim(conn, "w", ttl=60) is not None


def test_the_function_is_the_one_the_code_means(address):
    """Installed with the schema; installing again leaves it (no DDL while
    claimers run); a store whose function differs gets the code's."""
    with store.opened(address) as conn:
        def installed():
            return conn.execute(claims_postgres.INSTALLED,
                                {"name": claims_postgres.FUNCTION}).fetchall()
        body = claims_postgres.function_body(claims_postgres.function_sql())
        assert [row[0] for row in installed()] == [body]
        conn.execute(claims_postgres.function_sql().replace(
            "RETURN;  -- nothing eligible", "RETURN;  -- an older body"))
        claims.install(conn)
        assert [row[0] for row in installed()] == [body]


def test_the_function_grants_with_the_grant_the_race_tests_read():
    """The grant's second reading of the session rule is shown deterministically
    on ``claims_postgres.GRANT`` (tests/store/test_postgres.py: a holder that
    came after the pick refuses it); the function runs that very text, and its
    grant comes after its pick's session lock, in a statement of its own."""
    made = claims_postgres.function_sql()
    grant = claims_postgres.as_function_text(claims_postgres.GRANT, " " * 12)
    assert grant in made
    assert claims_postgres.SESSION_RULE.splitlines()[1].strip() in grant
    assert made.index("pg_try_advisory_xact_lock") < made.index(grant)
