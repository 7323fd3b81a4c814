"""``tests.lock_probe`` and ``store.write_lock_free`` answer from the lock's
state, never from a window (issue 36), on each backend: held, the second
writer is refused at once; free, it gets in; a step moved out of its lock is
caught every run."""

from __future__ import annotations

from crashcourse import store
from crashcourse.store import immediate, opened, write_lock_free
from tests.lock_probe import second_writer_got_in


def test_the_probe_is_refused_while_the_lock_is_held_and_let_in_when_free(store_at):
    address = store_at("probe")
    with opened(address) as conn:
        store.ensure_schema(conn, "CREATE TABLE IF NOT EXISTS t (x INTEGER)")
        assert write_lock_free(address)
        with immediate(conn):
            assert not write_lock_free(address)
        assert write_lock_free(address)


def test_a_step_read_before_its_lock_is_caught_and_one_under_it_is_not(
        store_at, monkeypatch):
    """The negative control of every ``second_writer_got_in`` test: the same
    spied step, once under ``immediate`` and once before it."""
    address = store_at("probe")
    with opened(address) as setup:
        store.ensure_schema(setup, "CREATE TABLE IF NOT EXISTS t (x REAL)")

    def under_the_lock(conn):
        with immediate(conn):
            conn.execute("INSERT INTO t (x) VALUES (:x)", {"x": store.now(conn)})

    def before_the_lock(conn):
        at = store.now(conn)
        with immediate(conn):
            conn.execute("INSERT INTO t (x) VALUES (:x)", {"x": at})

    assert not second_writer_got_in(address, monkeypatch, store, "now", under_the_lock)
    monkeypatch.undo()
    assert second_writer_got_in(address, monkeypatch, store, "now", before_the_lock)
