"""Grades exercise 05.2 (session_budget.py)."""

import threading

import pytest

from crashcourse import claims, fence
from crashcourse.store import connect, count_rows, opened

CEILING = 1000


@pytest.fixture
def mod(answer):
    return answer("ch05", "session_budget")


@pytest.fixture
def db(tmp_path, mod):
    path = tmp_path / "shop.db"
    with opened(path) as conn:
        mod.install(conn)
        claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
        claims.enqueue(conn, "mail:sugar", "back-office", "Restock sugar")
    return path


def both_claimed(conn):
    first = claims.claim(conn, "w1", ttl=30)
    second = claims.claim(conn, "w2", ttl=30)
    assert first and second and first.session != second.session
    return first, second


def total(conn):
    row = conn.execute("SELECT coalesce(sum(amount_cents), 0) FROM reservations")
    return row.fetchone()[0]


def test_only_the_affordable_reservation_is_admitted(mod, db):
    with opened(db) as conn:
        flour, sugar = both_claimed(conn)
        assert mod.reserve(conn, flour, "key-flour", 600, CEILING) is True
        assert mod.reserve(conn, sugar, "key-sugar", 600, CEILING) is False
        assert mod.reserve(conn, sugar, "key-sugar-small", 400, CEILING) is True
        assert total(conn) == CEILING
        kept = conn.execute(
            "SELECT operation_key, work_id FROM reservations ORDER BY operation_key")
        assert [tuple(r) for r in kept] == [("key-flour", flour.id),
                                            ("key-sugar-small", sugar.id)]


def test_a_stale_holder_reserves_nothing(mod, db):
    with opened(db) as conn:
        flour, _ = both_claimed(conn)
        fence.cancel(conn, flour.id)
        with pytest.raises(fence.StaleClaim):
            mod.reserve(conn, flour, "key-flour", 100, CEILING)
        assert count_rows(conn, "reservations") == 0


@pytest.mark.parametrize(("amount", "refusal"), [
    (0, ValueError), (-5, ValueError), (True, TypeError), (2.5, TypeError)])
def test_bad_amount_is_refused_before_writing(mod, db, amount, refusal):
    with opened(db) as conn:
        flour, _ = both_claimed(conn)
        with pytest.raises(refusal):
            mod.reserve(conn, flour, "key", amount, CEILING)
        assert count_rows(conn, "reservations") == 0


class Interleaving:
    """Makes the race land in the gap a two-transaction answer leaves.

    A connection that read ``reservations`` and is about to take the write lock
    from outside a transaction (``BEGIN``, or an INSERT in autocommit) waits,
    bounded, until the other side has read too. An answer that reads and
    inserts under one write lock never waits: it takes the lock first.
    """

    def __init__(self):
        self.read_done = {"a": threading.Event(), "b": threading.Event()}

    def watch(self, conn, mine: str, theirs: str) -> None:
        state = {"read": False}

        def on_statement(sql: str) -> None:
            words = sql.split() or [""]
            if "reservations" in sql and words[0].upper() == "SELECT":
                state["read"] = True
            elif state["read"] and not conn.in_transaction and words[0].upper() in (
                    "BEGIN", "INSERT"):
                self.read_done[mine].set()
                self.read_done[theirs].wait(timeout=10)

        conn.set_trace_callback(on_statement)

    def finished(self, mine: str) -> None:
        self.read_done[mine].set()


def test_two_sessions_racing_cannot_both_get_through(mod, db):
    with opened(db) as conn:
        flour, sugar = both_claimed(conn)
    results, start, race = {}, threading.Barrier(2), Interleaving()

    def attempt(claim, operation_key, other):
        conn = connect(db)
        race.watch(conn, operation_key, other)
        start.wait(timeout=10)
        try:
            results[operation_key] = mod.reserve(conn, claim, operation_key, 600,
                                                 CEILING)
        except Exception as failed:  # reported by the assertion below
            results[operation_key] = failed
        finally:
            race.finished(operation_key)
            conn.close()

    threads = [threading.Thread(target=attempt, args=(flour, "a", "b")),
               threading.Thread(target=attempt, args=(sugar, "b", "a"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(results.values(), key=repr) == [False, True]  # shows a failure
    with opened(db) as conn:
        assert total(conn) == 600
