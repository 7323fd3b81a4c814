"""Grades exercise 06.2 (unfenced_observe.py)."""

import sqlite3

import pytest

from crashcourse import claims, fence
from crashcourse.store import connect, opened

T0 = 1_700_000_000.0  # in the past: the real clock is later


@pytest.fixture
def mod(answer):
    return answer("ch06", "unfenced_observe")


@pytest.fixture
def replaced(tmp_path):
    with opened(tmp_path / "shop.db") as conn:
        fence.install(conn)
        claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
        old = claims.claim(conn, "worker-a", ttl=1, now=T0)
        new = claims.claim(conn, "worker-b", ttl=3600)
        yield conn, old, new


def rows_of(conn, generation):
    return conn.execute("SELECT count(*) FROM transcript WHERE generation = :g",
                        {"g": generation}).fetchone()[0]


def test_without_the_fence_the_stale_row_lands(mod, replaced):
    conn, old, _ = replaced
    mod.observe_unfenced(conn, old, {"text": "60 sacks"})
    with pytest.raises(fence.StaleClaim):
        fence.finish(conn, old, "DONE", "60 sacks")
    assert rows_of(conn, 1) == 1
    assert fence.transcript(conn, old.id) == [{"generation": 1, "text": "60 sacks"}]


def test_the_restored_fence_keeps_the_stale_row_out(mod, replaced):
    conn, old, _ = replaced
    with pytest.raises(fence.StaleClaim):
        mod.observe_restored(conn, old, {"text": "60 sacks"})
    assert rows_of(conn, 1) == 0
    refused = conn.execute("SELECT generation, action FROM refusals").fetchall()
    assert len(refused) == 1 and refused[0]["generation"] == 1


def test_the_restored_fence_lets_the_current_holder_write(mod, replaced):
    conn, _, new = replaced
    seq = mod.observe_restored(conn, new, {"text": "6 sacks"})
    row = conn.execute("SELECT * FROM transcript WHERE seq = :s", {"s": seq}).fetchone()
    assert row["generation"] == 2
    assert fence.transcript(conn, new.id) == [{"generation": 2, "text": "6 sacks"}]


def test_no_replacement_fits_between_the_check_and_the_insert(mod, replaced,
                                                               tmp_path):
    """Just before the transcript row is written, a replacement tries to claim
    the work from another connection. Under the fence's write lock it cannot
    (it gives up after a short wait); if the check already let go of the lock,
    it takes over and the row must not carry the superseded generation."""
    conn, _, current = replaced
    attempts = []

    def replacement_tries_to_claim(sql: str) -> None:
        if attempts or not sql.lstrip().upper().startswith("INSERT INTO TRANSCRIPT"):
            return
        rival = connect(tmp_path / "shop.db", busy_timeout_ms=200)
        try:
            attempts.append(claims.claim(rival, "worker-c", ttl=60,
                                         now=current.expires + 1, work_id=current.id))
        except sqlite3.OperationalError:  # locked: the fenced write holds the lock
            attempts.append(None)
        finally:
            rival.close()

    conn.set_trace_callback(replacement_tries_to_claim)
    try:
        mod.observe_restored(conn, current, {"text": "6 sacks"})
    except fence.StaleClaim:
        pass  # refused: the row is checked below either way
    finally:
        conn.set_trace_callback(None)
    assert len(attempts) == 1  # the row was about to be written once
    if attempts[0] is not None:  # the replacement got in before the insert
        assert rows_of(conn, current.generation) == 0
