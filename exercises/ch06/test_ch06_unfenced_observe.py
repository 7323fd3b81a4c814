"""Grades exercise 06.2 (unfenced_observe.py)."""

import pytest

from crashcourse import claims, fence
from crashcourse.store import opened

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
