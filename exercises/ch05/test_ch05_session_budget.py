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


def both_held(conn):
    first = claims.claim(conn, "w1", ttl=30)
    second = claims.claim(conn, "w2", ttl=30)
    assert first and second and first.session != second.session
    return first, second


def total(conn):
    row = conn.execute("SELECT coalesce(sum(amount_cents), 0) FROM reservations")
    return row.fetchone()[0]


def test_only_the_affordable_reservation_is_admitted(mod, db):
    with opened(db) as conn:
        flour, sugar = both_held(conn)
        assert mod.reserve(conn, flour, "op-flour", 600, CEILING) is True
        assert mod.reserve(conn, sugar, "op-sugar", 600, CEILING) is False
        assert mod.reserve(conn, sugar, "op-sugar-small", 400, CEILING) is True
        assert total(conn) == CEILING


def test_a_stale_holder_reserves_nothing(mod, db):
    with opened(db) as conn:
        flour, _ = both_held(conn)
        fence.cancel(conn, flour.id)
        with pytest.raises(fence.StaleClaim):
            mod.reserve(conn, flour, "op-flour", 100, CEILING)
        assert count_rows(conn, "reservations") == 0


@pytest.mark.parametrize("amount", [0, -5, True, 2.5])
def test_bad_amount_is_refused_before_writing(mod, db, amount):
    with opened(db) as conn:
        flour, _ = both_held(conn)
        with pytest.raises(ValueError):
            mod.reserve(conn, flour, "op", amount, CEILING)
        assert count_rows(conn, "reservations") == 0


def test_two_sessions_racing_cannot_both_get_through(mod, db):
    with opened(db) as conn:
        flour, sugar = both_held(conn)
    results, start = {}, threading.Barrier(2)

    def attempt(held, op):
        conn = connect(db)
        start.wait(timeout=10)
        try:
            results[op] = mod.reserve(conn, held, op, 600, CEILING)
        except Exception as failed:  # reported by the assertion below
            results[op] = failed
        finally:
            conn.close()

    threads = [threading.Thread(target=attempt, args=(flour, "a")),
               threading.Thread(target=attempt, args=(sugar, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(results.values()) == [False, True]
    with opened(db) as conn:
        assert total(conn) == 600
