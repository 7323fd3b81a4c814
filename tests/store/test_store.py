"""store.connect / immediate / opened (chapter 00): the way every file is opened."""

import sqlite3
import threading

import pytest

from crashcourse import store


@pytest.fixture
def db(tmp_path):
    return tmp_path / "shop.db"


def test_connect_turns_on_wal_busy_timeout_and_foreign_keys(db):
    conn = store.connect(db, busy_timeout_ms=1234)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 1234
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    finally:
        conn.close()


@pytest.mark.parametrize(("level", "number"), [("NORMAL", 1), ("full", 2)])
def test_connect_sets_the_synchronous_level(db, level, number):
    with store.opened(db, synchronous=level) as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == number


@pytest.mark.parametrize("level", ["sometimes", "", "NORMAL; DROP TABLE x"])
def test_a_bad_synchronous_level_is_refused_before_opening(db, level):
    with pytest.raises(ValueError, match="synchronous"):
        store.connect(db, synchronous=level)
    assert not db.exists()


@pytest.mark.parametrize("timeout", [1.5, True, "100"])
def test_a_busy_timeout_must_be_an_int(db, timeout):
    with pytest.raises(TypeError):
        store.connect(db, busy_timeout_ms=timeout)


def make_stock(conn):
    store.ensure_schema(
        conn, "CREATE TABLE IF NOT EXISTS stock (sku TEXT PRIMARY KEY, units INTEGER)"
    )


def test_immediate_commits_the_block(db):
    with store.opened(db) as conn:
        make_stock(conn)
        with store.immediate(conn):
            conn.execute("INSERT INTO stock VALUES (:sku, :units)",
                         {"sku": "oat-milk", "units": 24})
    with store.opened(db) as other:
        assert store.count_rows(other, "stock") == 1


def test_immediate_rolls_the_whole_block_back_on_an_exception(db):
    with store.opened(db) as conn:
        make_stock(conn)
        with pytest.raises(RuntimeError), store.immediate(conn):
            conn.execute("INSERT INTO stock VALUES ('oat-milk', 24)")
            raise RuntimeError("the worker gave up halfway")
        assert not conn.in_transaction
        assert store.count_rows(conn, "stock") == 0


def test_immediate_holds_the_write_lock_from_the_start(db):
    with store.opened(db) as conn, store.opened(db, busy_timeout_ms=0) as rival:
        make_stock(conn)
        with store.immediate(conn):
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                rival.execute("BEGIN IMMEDIATE")


def test_opened_closes_the_connection(db):
    with store.opened(db) as conn:
        pass
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_table_helpers_refuse_names_that_are_not_identifiers(db):
    with store.opened(db) as conn:
        with pytest.raises(ValueError):
            store.count_rows(conn, "stock; DROP TABLE stock")
        with pytest.raises(ValueError):
            store.table_rows(conn, "stock", order_by="1; --")


OPEN_NEW_FILE = """
import sys
from pathlib import Path
from crashcourse.store import connect
from crashcourse.waiting import wait_until
go = Path(sys.argv[2])
wait_until(go.exists, 30, interval=0.001, what="the go file")
conn = connect(sys.argv[1])
conn.execute("CREATE TABLE IF NOT EXISTS t (x)")
print(conn.execute("PRAGMA journal_mode").fetchone()[0])
"""


def test_many_processes_opening_one_new_file_together_all_get_wal(tmp_path):
    """The first opener of a new file switches it to WAL; a rival that asks at
    the same instant is told "locked" without waiting, and must retry."""
    import subprocess
    import sys

    db, go = tmp_path / "new.sqlite", tmp_path / "go"
    command = [sys.executable, "-c", OPEN_NEW_FILE, str(db), str(go)]
    openers = [subprocess.Popen(command, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
               for _ in range(8)]
    try:
        go.touch()
        results = [opener.communicate(timeout=60) for opener in openers]
    finally:
        for opener in openers:
            opener.kill()
    assert [opener.returncode for opener in openers] == [0] * 8, results
    assert [out.strip() for out, _ in results] == ["wal"] * 8


# --- guarantees (was tests/test_guarantees_store.py): each test defends one
# guarantee against the one-line bug named in its docstring


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
