"""Grades exercise 08.1 (transition.py): the compare-and-set and the cancel
request, raced for real.

Two real connections stand for the van driver and the clerk; rows decide.
Generated histories of moves and requests over several deliveries are
replayed against a model of the rules."""

import re
import sqlite3
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse.store import connect, opened, table_rows
from crashcourse.workflow import ILLEGAL_MOVE, STALE_VERSION, TransitionRefused

TABLES = ("deliveries", "delivery_history", "cancel_requests")
WRITTEN = TABLES[:2]  # what a move writes
ROUNDS = 12  # deliveries raced by two threads, each on its own connection
WAIT_S = 60  # bounded: a thread that hangs fails the test, it never blocks it
STARTS_TO_WRITE = re.compile(r"\s*(BEGIN|INSERT|UPDATE|REPLACE|DELETE)\b", re.I)
READS_DELIVERIES = re.compile(r"^\s*SELECT\b.*\bdeliveries\b", re.I | re.S)


@pytest.fixture
def mod(answer):
    return answer("ch08", "transition")


@pytest.fixture
def shop(mod, tmp_path):
    """A delivery of flour, booked at version 0."""
    path = tmp_path / "shop.sqlite"
    with opened(path) as conn:
        mod.install(conn)
        mod.book(conn, "flour-1", who="supplier")
        yield conn, path


def rows(conn) -> dict:
    return {table: table_rows(conn, table) for table in TABLES}


def history(conn, delivery_id="flour-1") -> list[tuple]:
    return [(r["version"], r["from_state"], r["to_state"], r["who"])
            for r in table_rows(conn, "delivery_history", order_by="version")
            if r["delivery_id"] == delivery_id]


def move(mod, conn, seen, to_state, who="driver", delivery_id="flour-1"):
    state, version = seen
    return mod.transition(conn, delivery_id, expected_state=state,
                          expected_version=version, to_state=to_state, who=who)


def refused(mod, conn, seen, to_state, reason):
    """The move is refused for ``reason``, nothing written, no transaction
    left open; the refusal's ``current`` as the row says."""
    before = rows(conn)
    with pytest.raises(TransitionRefused) as caught:
        move(mod, conn, seen, to_state, who="late")
    assert caught.value.reason == reason
    assert rows(conn) == before and not conn.in_transaction
    [row] = [r for r in before["deliveries"] if r["id"] == "flour-1"]
    assert caught.value.current == {"state": row["state"], "version": row["version"]}


def test_each_move_makes_the_next_version_and_a_history_row(mod, shop):
    conn, _ = shop
    assert move(mod, conn, ("booked", 0), "on_the_van", who="loader") == 1
    assert move(mod, conn, ("on_the_van", 1), "booked", who="driver") == 2
    assert move(mod, conn, ("booked", 2), "on_the_van", who="loader") == 3
    assert move(mod, conn, ("on_the_van", 3), "delivered", who="driver") == 4
    assert mod.read(conn, "flour-1") == {"delivery_id": "flour-1",
                                         "state": "delivered", "version": 4}
    assert history(conn) == [(0, None, "booked", "supplier"),
                             (1, "booked", "on_the_van", "loader"),
                             (2, "on_the_van", "booked", "driver"),
                             (3, "booked", "on_the_van", "loader"),
                             (4, "on_the_van", "delivered", "driver")]
    assert all(isinstance(r["at"], float)
               for r in table_rows(conn, "delivery_history"))
    assert not conn.in_transaction


def test_a_stale_version_is_refused_and_writes_nothing(mod, shop):
    conn, _ = shop
    move(mod, conn, ("booked", 0), "on_the_van")
    refused(mod, conn, ("booked", 0), "cancelled", STALE_VERSION)


def test_the_same_state_at_a_newer_version_is_still_stale(mod, shop):
    """The clerk saw it booked at version 0 and cancels. Meanwhile the van
    left and turned back: booked again, at version 2. Same state, not the
    same delivery the clerk looked at."""
    conn, _ = shop
    move(mod, conn, ("booked", 0), "on_the_van")
    move(mod, conn, ("on_the_van", 1), "booked")
    refused(mod, conn, ("booked", 0), "cancelled", STALE_VERSION)
    assert mod.read(conn, "flour-1")["state"] == "booked"


def test_a_caller_wrong_about_the_state_is_refused(mod, shop):
    """Version 0 is right, but the delivery was never loaded."""
    conn, _ = shop
    refused(mod, conn, ("on_the_van", 0), "delivered", STALE_VERSION)


@pytest.mark.parametrize(("seen", "to_state"), [
    (("booked", 0), "delivered"),  # skips the van
    (("booked", 0), "booked"),  # no move to itself
    (("on_the_van", 0), "cancelled"),  # too late to cancel, and stale too
], ids=["skips-a-state", "to-itself", "illegal-and-stale"])
def test_a_move_not_in_the_table_is_illegal_whatever_the_version(mod, shop, seen,
                                                                 to_state):
    conn, _ = shop
    refused(mod, conn, seen, to_state, ILLEGAL_MOVE)


def test_nothing_leaves_a_final_state(mod, shop):
    conn, _ = shop
    move(mod, conn, ("booked", 0), "cancelled", who="clerk")
    for to_state in ("booked", "on_the_van", "delivered"):
        refused(mod, conn, ("cancelled", 1), to_state, ILLEGAL_MOVE)


@pytest.mark.parametrize(("change", "error"), [
    ({"to_state": "lost"}, ValueError),
    ({"expected_state": "on_the_road"}, ValueError),
    ({"expected_version": -1}, ValueError),
    ({"expected_version": True}, (TypeError, ValueError)),
    ({"expected_version": "0"}, (TypeError, ValueError)),
    ({"expected_version": 0.0}, (TypeError, ValueError)),
    ({"who": "  "}, ValueError),
    ({"who": None}, (TypeError, ValueError)),
    ({"delivery_id": "rye-9"}, KeyError),
], ids=["unknown-state", "unknown-expected-state", "negative-version",
        "bool-version", "str-version", "float-version", "blank-who", "no-who",
        "unknown-delivery"])
def test_bad_input_is_a_clear_error_and_writes_nothing(mod, shop, change, error):
    conn, _ = shop
    call = {"delivery_id": "flour-1", "expected_state": "booked",
            "expected_version": 0, "to_state": "on_the_van", "who": "loader",
            **change}
    before = rows(conn)
    with pytest.raises(error):
        mod.transition(conn, call.pop("delivery_id"), **call)
    assert rows(conn) == before and not conn.in_transaction


@pytest.mark.parametrize("table", WRITTEN)
def test_a_crash_inside_the_move_leaves_all_of_it_or_none(mod, shop, table):
    """The process dies at the move's write to ``table``: SQLite refuses the
    statement, as a kill would leave it undone. The state must not move
    without its history row, nor the history claim a move that never was."""
    conn, _ = shop

    def dies_at_the_write(action, name, *_):
        hit = action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE)
        return sqlite3.SQLITE_DENY if hit and name == table else sqlite3.SQLITE_OK

    conn.set_authorizer(dies_at_the_write)
    try:
        with pytest.raises(sqlite3.DatabaseError):
            move(mod, conn, ("booked", 0), "on_the_van")
    finally:
        conn.set_authorizer(None)
    assert mod.read(conn, "flour-1")["version"] == 0
    assert history(conn) == [(0, None, "booked", "supplier")]
    assert not conn.in_transaction


def test_the_clerk_moves_between_your_read_and_your_write(mod, shop):
    """Both saw it on the van at version 1. The driver's move reads the row;
    just before it writes, the clerk (a second connection) marks it returned.
    Under the write lock the clerk waits, gives up and tries again after; with
    no lock held it gets in first and the driver's write must be refused."""
    conn, path = shop
    move(mod, conn, ("booked", 0), "on_the_van", who="loader")
    outcome, has_read = {}, []

    def clerk_tries(busy_timeout_ms):
        clerk = connect(path, busy_timeout_ms=busy_timeout_ms)
        try:
            return move(mod, clerk, ("on_the_van", 1), "returned", who="clerk")
        except sqlite3.OperationalError:
            return "locked"  # the driver's transaction holds the write lock
        except Exception as error:  # graded below
            return error
        finally:
            clerk.close()

    def the_clerk_steps_in(sql: str) -> None:
        """Once: at the driver's first write, or its BEGIN after a read."""
        has_read.extend(READS_DELIVERIES.findall(sql))
        starts = STARTS_TO_WRITE.match(sql)
        if starts and "clerk" not in outcome and (
                has_read or starts[1].upper() != "BEGIN"):
            outcome["clerk"] = clerk_tries(busy_timeout_ms=200)

    conn.set_trace_callback(the_clerk_steps_in)
    try:
        outcome["driver"] = move(mod, conn, ("on_the_van", 1), "delivered")
    except TransitionRefused as refusal:
        outcome["driver"] = refusal
    finally:
        conn.set_trace_callback(None)
    if outcome.get("clerk", "locked") == "locked":  # after the driver's commit
        outcome["clerk"] = clerk_tries(busy_timeout_ms=5000)
    winners = [who for who, got in outcome.items() if type(got) is int]
    assert len(winners) == 1, outcome
    [winner], [loser] = winners, [who for who in outcome if who not in winners]
    assert outcome[winner] == 2
    assert isinstance(outcome[loser], TransitionRefused), outcome
    assert outcome[loser].reason == STALE_VERSION
    to_state = {"driver": "delivered", "clerk": "returned"}[winner]
    assert history(conn)[2:] == [(2, "on_the_van", to_state, winner)]
    assert mod.read(conn, "flour-1") == {"delivery_id": "flour-1",
                                         "state": to_state, "version": 2}


def load_rye(mod, conn):
    return move(mod, conn, ("booked", 0), "on_the_van", "clerk", "rye-1")


def ask_to_cancel_rye(mod, conn):
    return mod.request_cancel(conn, "rye-1", who="clerk")


def book_oats(mod, conn):
    return mod.book(conn, "oats-1", who="supplier")


@pytest.mark.parametrize("elsewhere", [load_rye, ask_to_cancel_rye, book_oats],
                         ids=lambda f: f.__name__)
def test_another_delivery_moving_in_between_is_no_reason_to_refuse(mod, shop,
                                                                   elsewhere):
    """The driver delivers flour at version 1, as it is. Just before the
    driver's first write (or its BEGIN after a read) the clerk, on a second
    connection, writes something about ANOTHER delivery. Under the driver's
    write lock the clerk waits, gives up and does it after; otherwise it
    commits first. Either way flour's version is as the driver saw it: its
    move must stand. A transaction that read before it locked cannot write
    on top of the clerk's commit ("database is locked"), whichever delivery
    the clerk touched: that is not a newer version of flour."""
    conn, path = shop
    mod.book(conn, "rye-1", who="supplier")
    move(mod, conn, ("booked", 0), "on_the_van", who="loader")
    outcome, has_read = {}, []

    def clerk_tries(busy_timeout_ms):
        clerk = connect(path, busy_timeout_ms=busy_timeout_ms)
        try:
            return elsewhere(mod, clerk)
        except sqlite3.OperationalError:
            return "locked"  # the driver's transaction holds the write lock
        finally:
            clerk.close()

    def the_clerk_steps_in(sql: str) -> None:
        """Once: at the driver's first write, or its BEGIN after a read."""
        has_read.extend(READS_DELIVERIES.findall(sql))
        starts = STARTS_TO_WRITE.match(sql)
        if starts and "clerk" not in outcome and (
                has_read or starts[1].upper() != "BEGIN"):
            outcome["clerk"] = clerk_tries(busy_timeout_ms=200)

    conn.set_trace_callback(the_clerk_steps_in)
    try:
        outcome["driver"] = move(mod, conn, ("on_the_van", 1), "delivered")
    except TransitionRefused as refusal:
        outcome["driver"] = refusal.reason
    except sqlite3.OperationalError as error:  # not an answer: graded below
        outcome["driver"] = f"crashed: {error}"
    finally:
        conn.set_trace_callback(None)
    assert "clerk" in outcome, "the move never wrote"
    if outcome["clerk"] == "locked":  # after the driver's commit
        outcome["clerk"] = clerk_tries(busy_timeout_ms=5000)
    assert outcome["driver"] == 2, outcome
    assert outcome["clerk"] not in ("locked", None), outcome
    assert mod.read(conn, "flour-1") == {"delivery_id": "flour-1",
                                         "state": "delivered", "version": 2}
    assert history(conn)[2:] == [(2, "on_the_van", "delivered", "driver")]


def test_a_busy_database_is_not_a_stale_version(mod, shop):
    """Another writer holds the write lock (a long transaction of its own)
    for longer than the driver's busy timeout. The driver's view, booked at
    version 0, is current: its move is not done ("database is locked" is an
    error the caller must see as "not done"), and NOT refused as stale,
    which would tell it to read again a version that never moved. Once the
    lock is let go, the same move goes through."""
    conn, path = shop
    driver, other = connect(path, busy_timeout_ms=100), connect(path)
    try:
        other.execute("BEGIN IMMEDIATE")  # held for the whole of the move
        before = rows(conn)
        with pytest.raises(Exception) as caught:  # noqa: PT011  (any error)
            move(mod, driver, ("booked", 0), "on_the_van", who="loader")
        assert not isinstance(caught.value, TransitionRefused), caught.value
        assert not driver.in_transaction
        other.execute("ROLLBACK")
        assert rows(conn) == before
        assert move(mod, driver, ("booked", 0), "on_the_van", who="loader") == 1
    finally:
        driver.close()
        other.close()


def test_two_connections_race_and_exactly_one_wins(mod, shop):
    """Driver and clerk on their own connections, released by a barrier."""
    conn, path = shop
    for n in range(ROUNDS):
        mod.book(conn, f"rye-{n}", who="supplier")
        move(mod, conn, ("booked", 0), "on_the_van", "loader", f"rye-{n}")
    for n in range(ROUNDS):
        gate, got = threading.Barrier(2, timeout=WAIT_S), {}

        def person(who, to_state, n=n, gate=gate, got=got):
            with opened(path) as own:
                gate.wait()
                try:
                    got[who] = move(mod, own, ("on_the_van", 1), to_state, who,
                                    f"rye-{n}")
                except Exception as error:  # graded below
                    got[who] = error

        people = [threading.Thread(target=person, args=("driver", "delivered")),
                  threading.Thread(target=person, args=("clerk", "returned"))]
        for thread in people:
            thread.start()
        for thread in people:  # bounded: a hung thread fails the assert below
            thread.join(WAIT_S)
        assert not any(thread.is_alive() for thread in people)
        winners = [who for who, result in got.items() if type(result) is int]
        assert len(winners) == 1, got
        [loser] = set(got) - set(winners)
        assert isinstance(got[loser], TransitionRefused), got
        assert got[loser].reason == STALE_VERSION
        assert [h[0] for h in history(conn, f"rye-{n}")] == [0, 1, 2]
        assert history(conn, f"rye-{n}")[2][3] == winners[0]


CANCEL_REQUESTED = "cancel_requested"


def test_a_waiting_request_stops_the_delivery_going_on(mod, shop):
    """Loaded at version 1; the clerk asks to cancel, naming no version."""
    conn, _ = shop
    move(mod, conn, ("booked", 0), "on_the_van", who="loader")
    assert mod.request_cancel(conn, "flour-1", who="clerk") is True
    refused(mod, conn, ("on_the_van", 1), "delivered", CANCEL_REQUESTED)
    assert move(mod, conn, ("on_the_van", 1), "returned", who="driver") == 2
    assert history(conn)[-1] == (2, "on_the_van", "returned", "driver")


def test_the_moves_that_honour_a_request_go_on(mod, shop):
    """Turning back and cancelling honour the request; loading again does not."""
    conn, _ = shop
    move(mod, conn, ("booked", 0), "on_the_van", who="loader")
    mod.request_cancel(conn, "flour-1", who="clerk")
    assert move(mod, conn, ("on_the_van", 1), "booked", who="driver") == 2
    refused(mod, conn, ("booked", 2), "on_the_van", CANCEL_REQUESTED)
    assert move(mod, conn, ("booked", 2), "cancelled", who="clerk") == 3
    assert mod.read(conn, "flour-1")["state"] == "cancelled"


def test_a_request_stops_only_its_own_delivery(mod, shop):
    conn, _ = shop
    mod.book(conn, "rye-1", who="supplier")
    mod.request_cancel(conn, "rye-1", who="clerk")
    assert move(mod, conn, ("booked", 0), "on_the_van", who="loader") == 1
    assert move(mod, conn, ("on_the_van", 1), "delivered", who="driver") == 2
    with pytest.raises(TransitionRefused) as caught:
        move(mod, conn, ("booked", 0), "on_the_van", "loader", "rye-1")
    assert caught.value.reason == CANCEL_REQUESTED


def test_illegal_then_stale_then_a_request(mod, shop):
    """Judged in that order: a stale caller is told to read again first."""
    conn, _ = shop
    move(mod, conn, ("booked", 0), "on_the_van", who="loader")
    mod.request_cancel(conn, "flour-1", who="clerk")
    refused(mod, conn, ("booked", 0), "on_the_van", STALE_VERSION)
    refused(mod, conn, ("on_the_van", 1), "cancelled", ILLEGAL_MOVE)
    refused(mod, conn, ("on_the_van", 1), "delivered", CANCEL_REQUESTED)


def test_the_clerk_asks_between_your_read_and_your_write(mod, shop):
    """The driver's move has looked at the cancel requests; right after that
    look, at its next statement, the clerk (a second connection) asks to
    cancel. If the driver holds the write lock, the clerk waits, gives up and
    asks again after the move: the move was first, and stands. If not, the
    request commits before the move does, and the move must be refused."""
    conn, path = shop
    move(mod, conn, ("booked", 0), "on_the_van", who="loader")
    outcome, looked = {}, []

    def clerk_asks(busy_timeout_ms):
        clerk = connect(path, busy_timeout_ms=busy_timeout_ms)
        try:
            return mod.request_cancel(clerk, "flour-1", who="clerk")
        except sqlite3.OperationalError:
            return "locked"
        finally:
            clerk.close()

    def the_clerk_steps_in(sql: str) -> None:
        if looked and "clerk" not in outcome:  # the statement after the look
            outcome["clerk"] = clerk_asks(busy_timeout_ms=200)
        if "cancel_requests" in sql:
            looked.append(sql)

    conn.set_trace_callback(the_clerk_steps_in)
    try:
        outcome["driver"] = move(mod, conn, ("on_the_van", 1), "delivered")
    except TransitionRefused as refusal:
        outcome["driver"] = refusal.reason
    finally:
        conn.set_trace_callback(None)
    assert "clerk" in outcome, "the move never looked at the cancel requests"
    if outcome["clerk"] == "locked":  # the move held the lock: it came first
        assert outcome["driver"] == 2
        assert clerk_asks(busy_timeout_ms=5000) is True
    else:  # the request committed before the move decided
        assert outcome == {"clerk": True, "driver": CANCEL_REQUESTED}
        assert mod.read(conn, "flour-1")["version"] == 1


DELIVERIES = ("flour-1", "rye-1", "oats-1")
STEPS = st.lists(st.one_of(
    st.tuples(st.just("request"), st.sampled_from(DELIVERIES)),
    st.tuples(st.just("move"), st.sampled_from(DELIVERIES),
              st.sampled_from(("booked", "on_the_van", "delivered", "returned",
                               "cancelled")),
              st.sampled_from(("as_seen", "older", "other_state")))),
    max_size=14)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_any_history_of_moves_and_requests_ends_as_the_rules_say(mod, tmp_path,
                                                                 steps):
    """Several deliveries, requests and moves in any order, callers fresh or
    behind: every answer and the final rows are what the rules predict."""
    rules = {d: {"state": "booked", "version": 0, "asked": False}
             for d in DELIVERIES}
    forward = {("booked", "on_the_van"), ("on_the_van", "delivered")}
    with opened(tmp_path / f"shop-{len(list(tmp_path.iterdir()))}.sqlite") as conn:
        mod.install(conn)
        for delivery in DELIVERIES:
            mod.book(conn, delivery, who="supplier")
        for step in steps:
            row = rules[step[1]]
            if step[0] == "request":
                assert mod.request_cancel(conn, step[1], who="clerk") is (
                    not row["asked"])
                row["asked"] = True
                continue
            _, delivery, to_state, view = step
            seen_state = row["state"] if view != "other_state" else next(
                s for s in mod.STATES if s != row["state"])
            seen_version = row["version"] - (view == "older")
            if seen_version < 0:
                continue
            if (seen_state, to_state) not in mod.MOVES:
                expected = ILLEGAL_MOVE
            elif (seen_state, seen_version) != (row["state"], row["version"]):
                expected = STALE_VERSION
            elif row["asked"] and (seen_state, to_state) in forward:
                expected = CANCEL_REQUESTED
            else:
                expected = row["version"] + 1
                row.update(state=to_state, version=expected)
            try:
                got = mod.transition(conn, delivery, expected_state=seen_state,
                                     expected_version=seen_version,
                                     to_state=to_state, who="someone")
            except TransitionRefused as refusal:
                got = refusal.reason
            assert got == expected, (step, rules)
        for delivery, row in rules.items():
            assert mod.read(conn, delivery) == {"delivery_id": delivery,
                                                "state": row["state"],
                                                "version": row["version"]}
            assert [h[0] for h in history(conn, delivery)] == list(
                range(row["version"] + 1))
