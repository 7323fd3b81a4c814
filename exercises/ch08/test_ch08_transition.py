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
# a read of the deliveries in any shape: SELECT, a CTE, INSERT ... SELECT
READS_DELIVERIES = re.compile(r"\b(FROM|JOIN)\s+deliveries\b", re.I)


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


def goes_through(mod, conn, seen, to_state, who, version, why,
                 delivery_id="flour-1"):
    """The move is made and returns ``version``; ``why`` says what an answer
    that refuses it got wrong."""
    try:
        got = move(mod, conn, seen, to_state, who, delivery_id)
    except TransitionRefused as refusal:
        got = refusal
    assert got == version, (
        f"{why}: the move of {delivery_id} from {seen} to {to_state!r} answered"
        f" {got!r}, expected version {version}")


def refused(mod, conn, seen, to_state, reason):
    """The move is refused for ``reason``, nothing written, no transaction
    left open; the refusal's ``current`` as the row says."""
    before = rows(conn)
    with pytest.raises(TransitionRefused) as caught:
        said = move(mod, conn, seen, to_state, who="late")
        pytest.fail(f"a move from {seen} to {to_state!r} was made instead of refused"
                    f" ({reason}): it answered {said!r}")
    assert caught.value.reason == reason, (
        f"a move from {seen} to {to_state!r} was refused for the wrong reason:"
        " a move not in the table is illegal_move whatever the version, then a"
        " view older than the row is stale_version, then a waiting request is"
        f" cancel_requested; refused {caught.value.reason!r}, expected {reason!r}")
    assert rows(conn) == before and not conn.in_transaction, (
        f"the refused move from {seen} to {to_state!r} wrote rows or left its"
        f" transaction open (in_transaction={conn.in_transaction}): a refusal"
        " writes nothing")
    [row] = [r for r in before["deliveries"] if r["id"] == "flour-1"]
    current = {"state": row["state"], "version": row["version"]}
    assert caught.value.current == current, (
        "the refusal's current is not what the row says, so the caller cannot"
        f" read again from it: said {caught.value.current}, the row {current}")


def test_each_move_makes_the_next_version_and_a_history_row(mod, shop):
    conn, _ = shop
    for seen, to_state, who, version in [(("booked", 0), "on_the_van", "loader", 1),
                                         (("on_the_van", 1), "booked", "driver", 2),
                                         (("booked", 2), "on_the_van", "loader", 3),
                                         (("on_the_van", 3), "delivered", "driver", 4)]:
        got = move(mod, conn, seen, to_state, who=who)
        assert got == version, (
            f"the move from {seen} to {to_state!r} did not return the next"
            f" version: returned {got!r}, expected {version}")
    got = mod.read(conn, "flour-1")
    assert got == {"delivery_id": "flour-1", "state": "delivered", "version": 4}, (
        f"after four moves read() does not say delivered at version 4: {got}")
    expected = [(0, None, "booked", "supplier"), (1, "booked", "on_the_van", "loader"),
                (2, "on_the_van", "booked", "driver"),
                (3, "booked", "on_the_van", "loader"),
                (4, "on_the_van", "delivered", "driver")]
    assert history(conn) == expected, (
        "the history does not hold one row per move (version, from, to, who):"
        f" {history(conn)}, expected {expected}")
    ats = [r["at"] for r in table_rows(conn, "delivery_history")]
    assert all(isinstance(at, float) for at in ats), (
        f"a history row's 'at' is not a time in seconds (a float): {ats}")
    assert not conn.in_transaction, "the moves left a transaction open"


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
    state = mod.read(conn, "flour-1")["state"]
    assert state == "booked", (
        "the clerk's cancel from version 0 moved a delivery that had been on"
        f" the road since (booked again at version 2): now {state!r}")


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
        got = mod.transition(conn, call.pop("delivery_id"), **call)
        names = " or ".join(e.__name__ for e in (
            error if isinstance(error, tuple) else (error,)))
        pytest.fail(f"a move with {change} was accepted (returned {got!r})"
                    f" instead of a clear error ({names})")
    assert rows(conn) == before and not conn.in_transaction, (
        f"the bad move ({change}) wrote rows or left its transaction open"
        f" (in_transaction={conn.in_transaction}): a bad input writes nothing")


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
            said = move(mod, conn, ("booked", 0), "on_the_van")
            pytest.fail(f"the crash at the move's write to {table} was swallowed: the"
                        f" move answered {said!r} instead of letting the DatabaseError"
                        " through")
    finally:
        conn.set_authorizer(None)
    version = mod.read(conn, "flour-1")["version"]
    assert version == 0, (
        f"the move died at its write to {table}, and the delivery moved anyway"
        f" (version {version}): the state and its history row are one"
        " transaction, all of it or none")
    assert history(conn) == [(0, None, "booked", "supplier")], (
        f"the move died at its write to {table}, and the history claims a move:"
        f" {history(conn)}; the state and its history row are one transaction")
    assert not conn.in_transaction, (
        f"the move that died at its write to {table} left its transaction open")


def test_the_clerk_moves_between_your_read_and_your_write(mod, shop):
    """Both saw it on the van at version 1. The driver's move reads the row;
    just before it writes, the clerk (a second connection) marks it returned.
    Under the write lock the clerk waits, gives up and tries again after; with
    no lock held it gets in first and the driver's write must be refused."""
    conn, path = shop
    move(mod, conn, ("booked", 0), "on_the_van", who="loader")
    outcome, clerk_tries = the_clerk_writes_in_between(
        mod, conn, path,
        lambda clerk: move(mod, clerk, ("on_the_van", 1), "returned", who="clerk"))
    if outcome.get("clerk", "locked") == "locked":  # after the driver's commit
        outcome["clerk"] = clerk_tries(busy_timeout_ms=5000)
    winners = [who for who, got in outcome.items() if type(got) is int]
    assert len(winners) == 1, (
        "the clerk's move between the driver's read and write did not leave"
        " exactly one winner: the row was not held from the check to the"
        f" write, and one move was written over the other; outcome {outcome}")
    [winner], [loser] = winners, [who for who in outcome if who not in winners]
    assert outcome[winner] == 2, (
        f"the winner ({winner}) did not make version 2: {outcome}")
    assert isinstance(outcome[loser], TransitionRefused), (
        f"the loser ({loser}) was not refused with a TransitionRefused:"
        f" {outcome}")
    assert outcome[loser].reason == STALE_VERSION, (
        f"the loser ({loser}) saw version 1, which the winner moved on, and was"
        f" refused {outcome[loser].reason!r}, not stale_version")
    to_state = {"driver": "delivered", "clerk": "returned"}[winner]
    assert history(conn)[2:] == [(2, "on_the_van", to_state, winner)], (
        f"the history after the race does not hold the winner's ({winner})"
        f" one move alone: {history(conn)[2:]}")
    got = mod.read(conn, "flour-1")
    assert got == {"delivery_id": "flour-1", "state": to_state, "version": 2}, (
        f"the row after the race is not the winner's ({winner}) move: {got}")


def the_clerk_writes_in_between(mod, conn, path, clerk_does):
    """The driver delivers flour (on the van at version 1) on ``conn``; at its
    first write, or its BEGIN after a read, the clerk on a second connection
    (busy timeout 200 ms) does ``clerk_does(clerk_conn)``, once. Returns what
    each got (the driver's result, refusal, or "crashed: ..."; the clerk's
    result, "locked", or the error it raised) and ``clerk_tries`` to try the
    clerk's write again after the driver's commit."""
    outcome, has_read = {}, []

    def clerk_tries(busy_timeout_ms):
        clerk = connect(path, busy_timeout_ms=busy_timeout_ms)
        try:
            return clerk_does(clerk)
        except sqlite3.OperationalError:
            return "locked"  # the driver's transaction holds the write lock
        except Exception as error:  # graded by the caller
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
    except sqlite3.OperationalError as error:  # not an answer: graded by the caller
        outcome["driver"] = f"crashed: {error}"
    finally:
        conn.set_trace_callback(None)
    return outcome, clerk_tries


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
    outcome, clerk_tries = the_clerk_writes_in_between(
        mod, conn, path, lambda clerk: elsewhere(mod, clerk))
    assert "clerk" in outcome, (
        f"the driver's move never wrote (it answered {outcome['driver']!r})")
    if outcome["clerk"] == "locked":  # after the driver's commit
        outcome["clerk"] = clerk_tries(busy_timeout_ms=5000)
    driver = outcome["driver"]
    if isinstance(driver, TransitionRefused):
        driver = outcome["driver"] = driver.reason
    assert driver == 2, (
        f"the clerk's write to another delivery ({elsewhere.__name__}) stopped"
        " the driver's move of flour, whose version is as the driver saw it:"
        " 'database is locked' is no stale version, take the write lock"
        f" before you read; outcome {outcome}")
    assert outcome["clerk"] not in ("locked", None) and not isinstance(
        outcome["clerk"], Exception), (
        f"the clerk's write to another delivery ({elsewhere.__name__}) never"
        f" went through, even after the driver's commit: outcome {outcome}")
    got = mod.read(conn, "flour-1")
    assert got == {"delivery_id": "flour-1", "state": "delivered", "version": 2}, (
        f"flour is not delivered at version 2 after the driver's move: {got}")
    assert history(conn)[2:] == [(2, "on_the_van", "delivered", "driver")], (
        "the history does not hold the driver's one move of flour:"
        f" {history(conn)[2:]}")


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
            got = move(mod, driver, ("booked", 0), "on_the_van", who="loader")
            pytest.fail("another writer held the write lock the whole time, and"
                        f" the move answered {got!r}: it cannot have been done")
        assert not isinstance(caught.value, TransitionRefused), (
            "a busy database was reported as a refusal: the driver's view is"
            " current, 'database is locked' is 'not done', not stale_version;"
            f" refused {caught.value.reason!r}")
        assert not driver.in_transaction, (
            "the move that could not get the write lock left its transaction open")
        other.execute("ROLLBACK")
        assert rows(conn) == before, (
            "the move that could not get the write lock wrote rows anyway")
        goes_through(mod, driver, ("booked", 0), "on_the_van", "loader", 1,
                     "once the lock was let go the same move did not go through")
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
        assert not any(thread.is_alive() for thread in people), (
            f"a move of rye-{n} raced by two connections hung for {WAIT_S} s")
        winners = [who for who, result in got.items() if type(result) is int]
        assert len(winners) == 1, (
            f"driver and clerk raced to move rye-{n} from version 1 and not"
            " exactly one won: the compare-and-set does not check the version"
            f" under the write lock; they got {got}")
        [loser] = set(got) - set(winners)
        assert isinstance(got[loser], TransitionRefused), (
            f"the loser of the race for rye-{n} ({loser}) was not refused with"
            f" a TransitionRefused: {got}")
        assert got[loser].reason == STALE_VERSION, (
            f"the loser of the race for rye-{n} ({loser}) was refused"
            f" {got[loser].reason!r}: its version was moved on, stale_version")
        versions = [h[0] for h in history(conn, f"rye-{n}")]
        assert versions == [0, 1, 2], (
            f"the race for rye-{n} left history versions {versions}, not one"
            " row for the winner's move: [0, 1, 2]")
        who = history(conn, f"rye-{n}")[2][3]
        assert who == winners[0], (
            f"rye-{n}'s history names {who!r} for the move {winners[0]!r} won")


CANCEL_REQUESTED = "cancel_requested"


def test_a_waiting_request_stops_the_delivery_going_on(mod, shop):
    """Loaded at version 1; the clerk asks to cancel, naming no version."""
    conn, _ = shop
    move(mod, conn, ("booked", 0), "on_the_van", who="loader")
    asked = mod.request_cancel(conn, "flour-1", who="clerk")
    assert asked is True, (
        f"the first cancel request for flour was not recorded: answered {asked!r}")
    refused(mod, conn, ("on_the_van", 1), "delivered", CANCEL_REQUESTED)
    goes_through(mod, conn, ("on_the_van", 1), "returned", "driver", 2,
                 "turning back honours the waiting request, and was stopped")
    last = history(conn)[-1]
    assert last == (2, "on_the_van", "returned", "driver"), (
        f"the history's last row is not the driver turning back: {last}")


def test_the_moves_that_honour_a_request_go_on(mod, shop):
    """Turning back and cancelling honour the request; loading again does not."""
    conn, _ = shop
    move(mod, conn, ("booked", 0), "on_the_van", who="loader")
    mod.request_cancel(conn, "flour-1", who="clerk")
    goes_through(mod, conn, ("on_the_van", 1), "booked", "driver", 2,
                 "turning back honours the waiting request, and was stopped")
    refused(mod, conn, ("booked", 2), "on_the_van", CANCEL_REQUESTED)
    goes_through(mod, conn, ("booked", 2), "cancelled", "clerk", 3,
                 "cancelling is what the request asked for, and was stopped")
    state = mod.read(conn, "flour-1")["state"]
    assert state == "cancelled", f"flour was cancelled and reads {state!r}"


def test_a_request_stops_only_its_own_delivery(mod, shop):
    conn, _ = shop
    mod.book(conn, "rye-1", who="supplier")
    mod.request_cancel(conn, "rye-1", who="clerk")
    other = "the request for rye stopped flour: look up this delivery's request"
    goes_through(mod, conn, ("booked", 0), "on_the_van", "loader", 1, other)
    goes_through(mod, conn, ("on_the_van", 1), "delivered", "driver", 2, other)
    with pytest.raises(TransitionRefused) as caught:
        got = move(mod, conn, ("booked", 0), "on_the_van", "loader", "rye-1")
        pytest.fail("rye went on the van with its cancel request waiting:"
                    f" answered {got!r}")
    assert caught.value.reason == CANCEL_REQUESTED, (
        f"rye, with its cancel request waiting, was refused"
        f" {caught.value.reason!r}, not cancel_requested")


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
        assert outcome["driver"] == 2, (
            "the driver held the write lock, so its move came first and stands;"
            f" it answered {outcome['driver']!r}")
        asked = clerk_asks(busy_timeout_ms=5000)
        assert asked is True, (
            f"the clerk's request after the driver's move was not recorded: {asked!r}")
    else:  # the request committed before the move decided
        assert outcome == {"clerk": True, "driver": CANCEL_REQUESTED}, (
            "the clerk's request committed between the driver's look at the"
            " requests and its write, and the delivery went out anyway: look"
            f" for the request under the write lock; outcome {outcome}")
        version = mod.read(conn, "flour-1")["version"]
        assert version == 1, (
            f"flour moved (version {version}) with a cancel request waiting")


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
                asked = mod.request_cancel(conn, step[1], who="clerk")
                assert asked is (not row["asked"]), (
                    f"a cancel request for {step[1]} answered {asked!r}: True for"
                    " the first request, False once one waits; steps so far"
                    f" {steps}")
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
            assert got == expected, (
                f"the move {step} answered {got!r}, the rules say {expected!r}"
                " (illegal first, then stale, then a waiting request for this"
                f" delivery); the rules' rows before it {rules}")
        for delivery, row in rules.items():
            want = {"delivery_id": delivery, "state": row["state"],
                    "version": row["version"]}
            got = mod.read(conn, delivery)
            assert got == want, (
                f"after the moves {steps} {delivery} reads {got}, the rules say"
                f" {want}")
            versions = [h[0] for h in history(conn, delivery)]
            assert versions == list(range(row["version"] + 1)), (
                f"after the moves {steps} {delivery}'s history has versions"
                f" {versions}: one row for each version 0..{row['version']}")
