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
import re
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
    claimers run); a store whose function differs gets the file's."""
    with store.opened(address) as conn:
        def installed():
            return conn.execute(claims_postgres.INSTALLED,
                                {"name": claims_postgres.FUNCTION}).fetchall()
        body = claims_postgres.function_body(claims_postgres.FUNCTION_SQL)
        assert [row[0] for row in installed()] == [body]
        conn.execute(claims_postgres.FUNCTION_SQL.replace(
            "RETURN;  -- nothing eligible", "RETURN;  -- an older body"))
        claims.install(conn)
        assert [row[0] for row in installed()] == [body]


# The oracle of the function's text: the recovery pass's statements (DECIDE,
# GRANT), each ``:name`` read as the function's ``_name``. Only this test
# builds it; the store runs the text of claims/postgres.sql.
NAMED = re.compile(r"('(?:[^']|'')*')|(--[^\n]*)|(?<![:\w]):([A-Za-z_]\w*)")
IN_FUNCTION = {"id": "picked.id"}


def as_function_text(sql: str, indent: str) -> str:
    """``sql`` with each ``:name`` read as the function's ``_name``, indented."""
    def piece(found: re.Match) -> str:
        literal, comment, name = found.groups()
        if name is None:
            return literal or comment
        return IN_FUNCTION.get(name, "_" + name)
    return "\n".join(indent + line if line.strip() else ""
                     for line in NAMED.sub(piece, sql.strip()).splitlines())


def decides_and_grant() -> tuple[list[str], str]:
    """The six picks the function branches to (queued, either, work_id; with
    and without control_only) and its grant, in the function's spelling."""
    decides = [as_function_text(claims_postgres.decide_sql(
                   claims.ORDINARY, looks, control_only, True, None), " " * 12)
               + " INTO picked;"
               for looks in ("queued", "either", "work_id")
               for control_only in (False, True)]
    grant = as_function_text(claims_postgres.GRANT, " " * 12) + (
        " INTO claimed_generation, claimed_expires;")
    return decides, grant


def branches_of(function: str) -> list[tuple[str, str]]:
    """(looks, control_only) of each branch of the function, in its order."""
    return re.findall(r"IF _looks = '(\w+)' AND _control_only = (\w+) THEN",
                      function)


def test_the_function_keeps_the_statements_the_recovery_pass_sends():
    """postgres.sql is the function written out; this fails when it and the
    recovery pass's statements part: each pick, in its branch, and the
    grant, after the pick's session lock, in a statement of its own."""
    made = claims_postgres.FUNCTION_SQL
    decides, grant = decides_and_grant()
    assert branches_of(made) == [(looks, str(only).lower())
                                 for looks in ("queued", "either", "work_id")
                                 for only in (False, True)]
    positions = [made.index(decide) for decide in decides]
    assert positions == sorted(positions)
    assert grant in made
    assert claims_postgres.SESSION_RULE.splitlines()[1].strip() in grant
    assert made.index("pg_try_advisory_xact_lock") < made.index(grant)


def test_the_function_check_sees_a_pick_that_drifted(monkeypatch):
    """Its negative control: a recovery-pass pick that no longer reads the
    retry delay is no longer the function's."""
    drifted = claims_postgres.RULES.replace(
        "    AND item.available_after <= :now\n", "")
    monkeypatch.setattr(claims_postgres, "RULES", drifted)
    claims_postgres.pick_sql.cache_clear()
    claims_postgres.decide_sql.cache_clear()
    try:
        decides, _ = decides_and_grant()
        assert not any(decide in claims_postgres.FUNCTION_SQL for decide in decides)
    finally:
        monkeypatch.undo()
        claims_postgres.pick_sql.cache_clear()
        claims_postgres.decide_sql.cache_clear()
