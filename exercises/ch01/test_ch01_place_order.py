"""Grades exercise 01.2 (place_order.py): a rival process's insert may land
between any two of the answer's statements."""

import sqlite3

import pytest

from crashcourse.effects import EffectConflict
from crashcourse.store import connect, count_rows, opened


@pytest.fixture
def mod(answer):
    return answer("ch01", "place_order")


@pytest.fixture
def db(tmp_path, mod):
    path = tmp_path / "shop.db"
    with opened(path) as conn:
        mod.install(conn)
    return path


class RivalAfter:
    """Wraps a connection; right after statement number ``n`` of the answer,
    another connection (a rival worker) tries to insert the same order. It
    never waits: if the answer holds the write lock, the rival is blocked."""

    def __init__(self, conn, rival, n, order):
        self.conn, self.rival, self.n, self.order = conn, rival, n, order
        self.statements = 0
        self.rival_inserted = False

    def execute(self, sql, parameters=()):
        cursor = self.conn.execute(sql, parameters)
        self.statements += 1
        if self.statements == self.n:
            self.rival_turn()
        return cursor

    def rival_turn(self):
        try:
            self.rival_inserted = bool(self.rival.execute(
                "INSERT OR IGNORE INTO supplier_orders (key, sku, quantity)"
                " VALUES (:key, :sku, :quantity)", self.order,
            ).rowcount)
        except sqlite3.OperationalError:
            self.rival_inserted = False  # blocked by the answer's write lock

    def __getattr__(self, name):
        return getattr(self.conn, name)


def test_places_once_then_reports_already_placed(mod, db):
    with opened(db) as conn:
        assert mod.place_order_once(conn, "po-1", "oat-milk", 24) == "placed"
        assert mod.place_order_once(conn, "po-1", "oat-milk", 24) == "already_placed"
        assert count_rows(conn, "supplier_orders") == 1


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_a_rival_insert_between_statements_is_an_answer_not_a_crash(mod, db, n):
    order = {"key": "po-1", "sku": "oat-milk", "quantity": 24}
    with opened(db) as conn, opened(db, busy_timeout_ms=0) as rival:
        watched = RivalAfter(conn, rival, n, order)
        status = mod.place_order_once(watched, "po-1", "oat-milk", 24)
        expected = "already_placed" if watched.rival_inserted else "placed"
        assert status == expected
        assert count_rows(conn, "supplier_orders") == 1
        assert not conn.in_transaction


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_a_rival_with_another_order_under_our_key_is_a_conflict(mod, db, n):
    """The rival records a DIFFERENT order under our key (a worker with a bug,
    or one handed the wrong key): whatever answer we give must describe the
    row that is really there."""
    theirs = {"key": "po-1", "sku": "rye-bread", "quantity": 12}
    with opened(db) as conn, opened(db, busy_timeout_ms=0) as rival:
        watched = RivalAfter(conn, rival, n, theirs)
        try:
            said = mod.place_order_once(watched, "po-1", "oat-milk", 24)
        except EffectConflict as conflict:
            said = conflict
        rows = [tuple(r) for r in conn.execute("SELECT * FROM supplier_orders")]
        assert not conn.in_transaction
    if watched.rival_inserted:  # their row stands: ours is a conflict with it
        assert rows == [("po-1", "rye-bread", 12)]
        assert isinstance(said, EffectConflict), f"answered {said!r}"
        assert said.recorded == {"sku": "rye-bread", "quantity": 12}
        assert said.offered == {"sku": "oat-milk", "quantity": 24}
    else:  # the rival was blocked, or came after our commit and found our row
        assert rows == [("po-1", "oat-milk", 24)]
        assert said == "placed"


def test_a_rival_that_got_there_first_is_reported(mod, db):
    with opened(db) as first:
        assert mod.place_order_once(first, "po-1", "oat-milk", 24) == "placed"
    with opened(db) as second:
        assert mod.place_order_once(second, "po-1", "oat-milk", 24) == (
            "already_placed"
        )


@pytest.mark.parametrize("changed", [("oat-milk", 48), ("rye-bread", 24)])
def test_the_same_key_for_another_order_is_a_conflict(mod, db, changed):
    with opened(db) as conn:
        mod.place_order_once(conn, "po-1", "oat-milk", 24)
        with pytest.raises(EffectConflict):
            mod.place_order_once(conn, "po-1", *changed)
        rows = [tuple(r) for r in conn.execute("SELECT * FROM supplier_orders")]
        assert rows == [("po-1", "oat-milk", 24)]


@pytest.mark.parametrize(
    ("key", "sku", "quantity"),
    [("", "oat-milk", 24), ("po-1", "", 24), ("po-1", "oat-milk", 0),
     ("po-1", "oat-milk", -3), ("po-1", "oat-milk", True), ("po-1", "oat-milk", 2.5)],
)
def test_bad_input_is_refused_and_nothing_is_written(mod, db, key, sku, quantity):
    conn = connect(db)
    try:
        with pytest.raises((ValueError, TypeError)):
            mod.place_order_once(conn, key, sku, quantity)
        assert count_rows(conn, "supplier_orders") == 0
    finally:
        conn.close()
