"""Opening a store and the payment workers' second read (chapters 00, 02):
each test defends one guarantee against the one-line bug named in its
docstring."""

from __future__ import annotations

import sqlite3
import threading

from crashcourse import store
from crashcourse.services import payments
from crashcourse.workers import paying


def test_opening_waits_out_a_writer_holding_the_lock_while_it_switches_to_wal(
        tmp_path):
    """Bug: ``enter_wal`` gives up at the first "database is locked".

    A rival holds the write lock of a file still in rollback mode; switching
    to WAL is then refused at once (SQLite's busy handler is not asked), so
    ``connect`` must retry until the rival commits."""
    path = tmp_path / "old.sqlite"
    rival = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    rival.execute("CREATE TABLE t (x)")  # journal_mode is still "delete"
    rival.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, lambda: rival.execute("COMMIT"))
    release.start()
    try:
        with store.opened(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        release.join(timeout=10)
        rival.close()


def paid_twice(tmp_path):
    service, state = tmp_path / "payments.sqlite", tmp_path / "worker.sqlite"
    payments.install(service)
    with store.opened(state) as conn:
        paying.install(conn)
        for order in ("o1", "o2"):
            payments.approve(service, order, 100, "USD")
            payments.issue_payment(service, f"k-{order}", order, 100, "USD")
            paying.save_checkpoint(conn, f"t-{order}", f"k-{order}", "committed")
    return service, state


def test_the_recount_is_a_second_read_not_the_snapshot_again(tmp_path, monkeypatch):
    """Bug: ``recount`` returns the lengths of ``snapshot``'s own lists, so a
    first read that lost rows is confirmed by the read meant to check it."""
    service, state = paid_twice(tmp_path)
    assert paying.recount(service, state) == {"payments": 2, "checkpoints": 2}
    # The first read now drops every row; the second must still see them.
    monkeypatch.setattr(payments, "snapshot",
                        lambda path: {"payments": [], "approvals": []})
    monkeypatch.setattr(paying, "checkpoints", lambda conn: [])
    monkeypatch.setattr(paying, "table_rows", lambda *args, **kwargs: [])
    assert paying.snapshot(service, state)["payments"] == []
    assert paying.recount(service, state) == {"payments": 2, "checkpoints": 2}


def test_the_recount_of_a_worker_killed_before_it_installed_is_zero(tmp_path):
    service, state = paid_twice(tmp_path)
    fresh = tmp_path / "fresh.sqlite"
    with store.opened(fresh):
        pass  # the worker's file exists, its tables were never made
    assert paying.recount(service, fresh) == {"payments": 2, "checkpoints": 0}
    with store.opened(fresh) as conn:
        assert paying.own_tables(conn) == set()  # the read created nothing
