"""Grades exercise 01.2 (place_order.py): a rival process's insert may land
between any two of the answer's statements, and the grader tries every one:
after statement 1, 2, ... of the answer, until the answer runs out of them."""

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    """Watches a connection; right after statement number ``n`` of the answer
    (just before its next one starts), another connection (a rival worker)
    tries to insert the same order. It never waits: if the answer holds the
    write lock, the rival is blocked.

    The watch is SQLite's own statement trace on the answer's connection, so
    every statement counts, whichever call ran it: ``conn.execute``, a
    ``conn.cursor()``, ``executemany`` (each row) or ``executescript``."""

    def __init__(self, conn, rival, n, order):
        self.conn, self.rival, self.n, self.order = conn, rival, n, order
        self.statements = 0
        self.rival_inserted = False
        self.fault = None

    def __enter__(self):
        self.conn.set_trace_callback(self.starting)
        return self.conn

    def __exit__(self, *exc):
        self.conn.set_trace_callback(None)
        if self.fault is not None:
            raise self.fault

    def starting(self, sql):
        """SQLite calls this as each statement starts, before it takes a lock."""
        try:
            if self.statements == self.n:
                self.rival_turn()
            self.statements += 1
        except BaseException as fault:  # sqlite3 would swallow it
            self.fault = fault

    def rival_turn(self):
        try:
            self.rival_inserted = bool(self.rival.execute(
                "INSERT OR IGNORE INTO supplier_orders (key, sku, quantity)"
                " VALUES (:key, :sku, :quantity)", self.order,
            ).rowcount)
        except sqlite3.OperationalError:
            self.rival_inserted = False  # blocked by the answer's write lock


def test_places_once_then_reports_already_placed(mod, db):
    with opened(db) as conn:
        said = mod.place_order_once(conn, "po-1", "oat-milk", 24)
        assert said == "placed", (
            "the first order under a new key was not reported as placed:"
            f" place_order_once answered {said!r}, not 'placed'")
        said = mod.place_order_once(conn, "po-1", "oat-milk", 24)
        assert said == "already_placed", (
            "the same order again under the same key was not recognised as a"
            f" replay: answered {said!r}, not 'already_placed'")
        rows = count_rows(conn, "supplier_orders")
        assert rows == 1, (
            "the replay wrote a second supplier order: the key must be checked"
            f" before inserting; {rows} rows in supplier_orders, not 1")


# Orders a rival may record under our key: sometimes ours, sometimes another.
ORDERS = st.fixed_dictionaries({
    "sku": st.sampled_from(["oat-milk", "rye-bread"]),
    "quantity": st.integers(min_value=1, max_value=48),
})
# Enough for any honest answer; an answer that needs more is not watched.
MOST_STATEMENTS = 40


def rival_at_every_boundary(mod, tmp_path, ours: dict, theirs: dict):
    """Run the answer once per statement boundary, each time on a new file:
    the rival inserts ``theirs`` right after statement 1, then 2, ... until a
    run ends before the rival's turn. Yields (n, rival_inserted, answer, rows);
    ``answer`` is what the call returned or raised."""
    for n in range(1, MOST_STATEMENTS + 1):
        db = tmp_path / f"shop-{n}.db"
        with opened(db) as conn:
            mod.install(conn)
        with opened(db) as conn, opened(db, busy_timeout_ms=0) as rival:
            watched = RivalAfter(conn, rival, n, {"key": "po-1", **theirs})
            with watched:
                try:
                    said = mod.place_order_once(conn, "po-1", ours["sku"],
                                                ours["quantity"])
                except EffectConflict as conflict:
                    said = conflict
            assert watched.statements > 0, (
                "no statement ran on the connection the answer was given")
            rows = [tuple(r) for r in conn.execute("SELECT * FROM supplier_orders")]
            assert not conn.in_transaction, f"a transaction left open (rival at {n})"
        yield n, watched.rival_inserted, said, rows
        if watched.statements <= n:  # the answer finished before the rival's turn
            return
    pytest.fail(f"more than {MOST_STATEMENTS} statements for one order")


def the_truth(rival_inserted: bool, ours: dict, theirs: dict):
    """What must stand, and what the answer must say, given who wrote first."""
    if not rival_inserted:  # the rival was blocked, or came after our commit
        return (("po-1", ours["sku"], ours["quantity"]),), "placed"
    row = (("po-1", theirs["sku"], theirs["quantity"]),)
    return row, "already_placed" if theirs == ours else "conflict"


def test_a_rival_insert_between_statements_is_an_answer_not_a_crash(mod, tmp_path):
    """The same order from the rival, after every statement of the answer."""
    order = {"sku": "oat-milk", "quantity": 24}
    for n, inserted, said, rows in rival_at_every_boundary(mod, tmp_path, order,
                                                           order):
        expected_rows, expected = the_truth(inserted, order, order)
        assert rows == list(expected_rows), (
            f"with a rival's insert after statement {n}, the row under the key"
            " is not the first writer's: a second order must never replace it;"
            f" {rows}, not {list(expected_rows)}")
        assert said == expected, (
            f"with a rival's insert after statement {n}, the answer said"
            f" {said!r} where the row then recorded calls for {expected!r}:"
            " the read, the comparison and the insert must hold the write"
            " lock together (BEGIN IMMEDIATE)")


def test_a_rival_with_another_order_under_our_key_is_a_conflict(mod, tmp_path):
    """The rival records a DIFFERENT order under our key (a worker with a bug,
    or one handed the wrong key): whatever answer we give must describe the
    row that is really there, after every statement of the answer."""
    ours, theirs = {"sku": "oat-milk", "quantity": 24}, {"sku": "rye-bread",
                                                         "quantity": 12}
    for n, inserted, said, rows in rival_at_every_boundary(mod, tmp_path, ours,
                                                           theirs):
        expected_rows, expected = the_truth(inserted, ours, theirs)
        assert rows == list(expected_rows), (
            f"with a rival's insert after statement {n}, the row under the key"
            " is not the first writer's: a second order must never replace it;"
            f" {rows}, not {list(expected_rows)}")
        if expected == "conflict":
            assert isinstance(said, EffectConflict), (
                f"with a rival's other order under our key after statement {n},"
                f" the answer said {said!r}, not a conflict: it compared before"
                " the rival's row existed; the read, the comparison and the"
                " insert must hold the write lock together")
            assert said.recorded == theirs and said.offered == ours, (
                f"rival after statement {n}: the conflict does not describe the"
                " rival's row as recorded and this call's order as offered"
                f" (swapped, or not dicts): recorded={said.recorded!r},"
                f" offered={said.offered!r}; expected {theirs!r}, {ours!r}")
        else:
            assert said == expected, (
                f"with a rival's insert after statement {n}, the answer said"
                f" {said!r} where the row then recorded calls for {expected!r}:"
                " the read, the comparison and the insert must hold the write"
                " lock together (BEGIN IMMEDIATE)")


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ours=ORDERS, theirs=ORDERS)
def test_any_two_orders_at_any_boundary(mod, tmp_path_factory, ours, theirs):
    """Orders drawn at random: the same one, another item, another quantity."""
    tmp_path = tmp_path_factory.mktemp("orders")
    for n, inserted, said, rows in rival_at_every_boundary(mod, tmp_path, ours,
                                                           theirs):
        expected_rows, expected = the_truth(inserted, ours, theirs)
        assert rows == list(expected_rows), (
            f"with a rival's insert after statement {n}, the row under the key"
            " is not the first writer's: a second order must never replace it;"
            f" {rows}, not {list(expected_rows)}")
        if expected == "conflict":
            assert isinstance(said, EffectConflict), (
                f"with a rival's other order under our key after statement {n},"
                f" the answer said {said!r}, not a conflict: it compared before"
                " the rival's row existed; the read, the comparison and the"
                " insert must hold the write lock together")
            assert (said.recorded, said.offered) == (theirs, ours), (
                f"rival after statement {n}: the conflict does not describe the"
                " rival's row as recorded and this call's order as offered"
                f" (swapped, or not dicts): recorded={said.recorded!r},"
                f" offered={said.offered!r}; expected {theirs!r}, {ours!r}")
        else:
            assert said == expected, (
                f"with a rival's insert after statement {n}, the answer said"
                f" {said!r} where the row then recorded calls for {expected!r}:"
                " the read, the comparison and the insert must hold the write"
                " lock together (BEGIN IMMEDIATE)")


def test_a_rival_that_got_there_first_is_reported(mod, db):
    with opened(db) as first:
        said = mod.place_order_once(first, "po-1", "oat-milk", 24)
        assert said == "placed", (
            "the first order under a new key was not reported as placed:"
            f" answered {said!r}, not 'placed'")
    with opened(db) as second:
        said = mod.place_order_once(second, "po-1", "oat-milk", 24)
        assert said == "already_placed", (
            "a second connection did not see the order the first one committed:"
            " the answer must read the durable row, not remember in memory;"
            f" answered {said!r}, not 'already_placed'")


@pytest.mark.parametrize("changed", [("oat-milk", 48), ("rye-bread", 24)])
def test_the_same_key_for_another_order_is_a_conflict(mod, db, changed):
    with opened(db) as conn:
        mod.place_order_once(conn, "po-1", "oat-milk", 24)
        with pytest.raises(EffectConflict) as raised:
            said = mod.place_order_once(conn, "po-1", *changed)
            pytest.fail(f"the key po-1 for another order {changed} was not refused"
                        f" with an EffectConflict: it answered {said!r}")
        conflict = raised.value  # what the caller reads to decide: the fields
        assert conflict.key == "po-1", (
            "the conflict does not name the key that was refused:"
            f" conflict.key is {conflict.key!r}, not 'po-1'")
        assert conflict.recorded == {"sku": "oat-milk", "quantity": 24}, (
            "the conflict's recorded is not the order on record, as a dict"
            " of sku and quantity (the caller reads conflict.recorded['sku']):"
            f" {conflict.recorded!r}")
        assert conflict.offered == {"sku": changed[0], "quantity": changed[1]}, (
            "the conflict's offered is not this call's order, as a dict of"
            f" sku and quantity: {conflict.offered!r}")
        rows = [tuple(r) for r in conn.execute("SELECT * FROM supplier_orders")]
        assert rows == [("po-1", "oat-milk", 24)], (
            "a conflicting order changed what was recorded under the key: the"
            " first order must stand untouched; supplier_orders holds"
            f" {rows}, not [('po-1', 'oat-milk', 24)]")


@pytest.mark.parametrize(
    ("key", "sku", "quantity"),
    [("", "oat-milk", 24), ("po-1", "", 24), ("po-1", "oat-milk", 0),
     ("po-1", "oat-milk", -3), ("po-1", "oat-milk", True), ("po-1", "oat-milk", 2.5)],
)
def test_bad_input_is_refused_and_nothing_is_written(mod, db, key, sku, quantity):
    conn = connect(db)
    try:
        with pytest.raises((ValueError, TypeError)):
            said = mod.place_order_once(conn, key, sku, quantity)
            pytest.fail(f"the bad order (key={key!r}, sku={sku!r},"
                        f" quantity={quantity!r}) was not refused with a ValueError or"
                        f" TypeError: it answered {said!r}")
        rows = count_rows(conn, "supplier_orders")
        assert rows == 0, (
            "a refused order still wrote a row: the input must be checked"
            f" before anything is inserted; {rows} rows for"
            f" key={key!r} sku={sku!r} quantity={quantity!r}")
    finally:
        conn.close()
