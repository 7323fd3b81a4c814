"""Grades exercise 01.1 (apply_checked.py): applied, replayed, refused, or a
conflict, and a refusal kept under its key."""

import json
import sqlite3
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse.effects import EffectConflict
from crashcourse.lab.harness import BoundaryNotReached, Harness
from crashcourse.store import count_rows, opened
from crashcourse.validate import canonical

NOTE = {"sku": "oat-milk", "quantity": 24}


@pytest.fixture
def mod(answer):
    return answer("ch01", "apply_checked")


@pytest.fixture
def db(tmp_path, mod):
    path = tmp_path / "shop.db"
    with opened(path) as conn:
        mod.install(conn)
        conn.execute("CREATE TABLE notes (text TEXT NOT NULL)")
    return path


class Poster:
    """A mutation that counts how often it ran."""

    def __init__(self):
        self.calls = 0

    def __call__(self, conn):
        self.calls += 1
        conn.execute("INSERT INTO notes (text) VALUES ('24 cartons')")
        return {"note": self.calls}


class Stocker:
    """A mutation that writes its note, then raises ``fails_with(why)`` (a
    refusal, or a failure) unless that is None; it counts how often it ran."""

    def __init__(self, fails_with, why="oat-milk is not stocked"):
        self.calls, self.fails_with, self.why = 0, fails_with, why

    def __call__(self, conn):
        self.calls += 1
        conn.execute("INSERT INTO notes (text) VALUES ('24 cartons')")
        if self.fails_with is not None:
            raise self.fails_with(self.why)
        return {"note": self.calls}


def stored(db, key):
    """The key's request row as stored: payload and result decoded, refusal."""
    with opened(db) as conn:
        row = conn.execute("SELECT payload, result, refusal FROM requests"
                           " WHERE key = :key", {"key": key}).fetchone()
    if row is None:
        return None
    try:
        decoded = [None if v is None else json.loads(v) for v in tuple(row)[:2]]
    except json.JSONDecodeError:
        pytest.fail("the request row does not store its payload and result as"
                    " JSON (canonical, not str(payload)): (payload, result) ="
                    f" {tuple(row)[:2]!r}")
    return (*decoded, row["refusal"])


def test_first_call_applies_and_returns_the_result(mod, db):
    post = Poster()
    with opened(db) as conn:
        said = mod.apply_checked(conn, "k-1", NOTE, post)
        assert said == ("applied", {"note": 1}), (
            "the first call under a new key did not answer ('applied', the"
            f" mutation's result): answered {said!r}")
        notes = count_rows(conn, "notes")
        assert notes == 1, (
            f"the mutation's note is not on file once: {notes} notes, not 1")
        requests = count_rows(conn, "requests")
        assert requests == 1, (
            "the key's request row was not recorded once with the mutation:"
            f" {requests} rows in requests, not 1")
    # the key's answer is the stored row: its payload and its result column
    row = stored(db, "k-1")
    assert row == (NOTE, {"note": 1}, None), (
        "the request row does not hold the payload and the result as JSON (and"
        " no refusal): a replay could not answer from it;"
        f" (payload, result, refusal) = {row!r}")


def test_a_replay_in_a_new_connection_returns_the_recorded_result(mod, db):
    post = Poster()
    with opened(db) as conn:
        mod.apply_checked(conn, "k-1", NOTE, post)
    with opened(db) as conn:  # as a replacement process would
        again = mod.apply_checked(conn, "k-1", dict(reversed(NOTE.items())), post)
        notes = count_rows(conn, "notes")
        assert notes == 1, (
            "the replay posted the note again: the payload with its keys in"
            " another order is the same action (compare canonical JSON, not"
            f" str(payload)); {notes} notes, not 1")
    assert again == ("already_applied", {"note": 1}), (
        "a replay from a new connection did not answer from the stored row:"
        f" answered {again!r}, not ('already_applied', {{'note': 1}})")
    assert post.calls == 1, (
        f"the replay ran the mutation again: it ran {post.calls} times, not once")


def test_a_changed_payload_is_refused_and_nothing_moves(mod, db):
    post = Poster()
    with opened(db) as conn:
        mod.apply_checked(conn, "k-1", NOTE, post)
        with pytest.raises(EffectConflict) as raised:
            said = mod.apply_checked(conn, "k-1", {**NOTE, "quantity": 48}, post)
            pytest.fail("the same key with another payload (quantity 48) was not"
                        f" refused with an EffectConflict: it answered {said!r}")
        conflict = raised.value  # what the caller reads: the payloads, as values
        assert (conflict.key, conflict.recorded, conflict.offered) == (
            "k-1", NOTE, {**NOTE, "quantity": 48}), (
            "EffectConflict(key, recorded, offered): the recorded payload and"
            f" the offered one, as values; got {conflict.recorded!r},"
            f" {conflict.offered!r}")
        assert post.calls == 1, (
            "a conflicting payload ran the mutation: it ran"
            f" {post.calls} times, not once")
        notes = count_rows(conn, "notes")
        assert notes == 1, (
            f"a conflicting payload changed the notes: {notes} notes, not 1")
        row = conn.execute("SELECT payload FROM requests").fetchone()
        assert json.loads(row[0]) == NOTE, (
            "a conflicting payload overwrote the recorded one: the request row"
            f" holds {row[0]!r}")
        assert not conn.in_transaction, (
            "the conflict was raised with a transaction left open on the"
            " connection: roll back (or commit) before raising")


def test_a_failing_mutation_leaves_no_request_row(mod, db):
    def fail_halfway(conn):
        conn.execute("INSERT INTO notes (text) VALUES ('half')")
        raise RuntimeError("supplier catalogue unreachable")

    with opened(db) as conn:
        with pytest.raises(RuntimeError):
            said = mod.apply_checked(conn, "k-2", NOTE, fail_halfway)
            pytest.fail("the mutation's own failure (a RuntimeError) was swallowed:"
                        f" apply_checked answered {said!r} instead of letting it"
                        " through")
        requests, notes = count_rows(conn, "requests"), count_rows(conn, "notes")
        assert requests == 0, (
            "a mutation that failed (not a refusal) left the key recorded: the"
            " request row must roll back with it, so a retry runs again;"
            f" {requests} request rows")
        assert notes == 0, (
            "a mutation that failed kept what it wrote before failing: its"
            f" writes must roll back; {notes} notes")
        said = mod.apply_checked(conn, "k-2", NOTE, Poster())
        assert said[0] == "applied", (
            "after a failed mutation the key was not free again: the retry"
            f" answered {said!r}, not 'applied'")


@pytest.mark.parametrize("key", ["", "  ", None, 42])
def test_bad_keys_are_refused_before_anything_is_written(mod, db, key):
    post = Poster()
    with opened(db) as conn:
        with pytest.raises(ValueError):
            said = mod.apply_checked(conn, key, NOTE, post)
            pytest.fail(f"the bad key {key!r} was not refused with a ValueError:"
                        f" apply_checked answered {said!r}")
        requests = count_rows(conn, "requests")
        assert requests == 0, (
            f"a bad key {key!r} was refused after a request row was written:"
            f" check the key before the transaction; {requests} rows")
    assert post.calls == 0, (
        f"the mutation ran for a bad key {key!r}: check the key before running"
        f" anything; it ran {post.calls} times")


def test_a_refusal_is_kept_and_a_replay_hears_it(mod, db):
    stock = Stocker(mod.Refused)
    with opened(db) as conn:
        with pytest.raises(mod.Refused) as first:
            said = mod.apply_checked(conn, "k-3", NOTE, stock)
            pytest.fail("the mutation refused (oat-milk is not stocked) and the"
                        f" caller did not hear it: apply_checked answered {said!r}"
                        " instead of raising Refused")
        assert first.value.reason == "oat-milk is not stocked", (
            "the Refused raised does not carry the mutation's reason:"
            f" {first.value.reason!r}")
        notes = count_rows(conn, "notes")  # what it wrote before refusing
        assert notes == 0, (
            "the refused mutation's note was kept: what it wrote before"
            " refusing must roll back (a savepoint) while the refusal is"
            f" recorded; {notes} notes")
        row = conn.execute("SELECT payload, refusal FROM requests").fetchone()
        kept = None if row is None else (json.loads(row["payload"]),
                                         row["refusal"])
        assert kept == (NOTE, "oat-milk is not stocked"), (
            "the refusal is not on record under the key: the request row must"
            " commit with the refusal before Refused is raised;"
            f" (payload, refusal) = {kept!r}")
        assert not conn.in_transaction, (
            "Refused was raised with a transaction left open: commit the"
            " refusal first")
    stock.fails_with = None  # oat milk is stocked now: the key still says no
    with opened(db) as conn:  # as a replacement process would
        with pytest.raises(mod.Refused) as again:
            said = mod.apply_checked(conn, "k-3", dict(reversed(NOTE.items())), stock)
            pytest.fail("the replay of a refused key did not raise the recorded"
                        f" Refused (the key still says no): it answered {said!r}")
        assert again.value.reason == "oat-milk is not stocked", (
            "the replay of a refused key did not hear the recorded reason:"
            f" {again.value.reason!r}")
        notes, requests = count_rows(conn, "notes"), count_rows(conn, "requests")
        assert notes == 0, (
            "the replay of a refused key applied the note the first caller was"
            f" told was refused: {notes} notes, not 0")
        assert requests == 1, (
            f"the refused key is not recorded once: {requests} request rows")
    assert stock.calls == 1, (
        "the replay of a refused key ran the mutation again: the refusal must"
        f" be answered from the row; it ran {stock.calls} times, not once")


def test_a_refused_key_with_another_payload_is_still_a_conflict(mod, db):
    with opened(db) as conn:
        with pytest.raises(mod.Refused):
            said = mod.apply_checked(conn, "k-3", NOTE, Stocker(mod.Refused))
            pytest.fail("the mutation refused and the caller did not hear it:"
                        f" apply_checked answered {said!r} instead of raising Refused")
        later = Stocker(None)
        with pytest.raises(EffectConflict) as raised:
            said = mod.apply_checked(conn, "k-3", {**NOTE, "quantity": 12}, later)
            pytest.fail("another payload under a refused key was not refused with an"
                        f" EffectConflict: it answered {said!r}")
        assert (raised.value.recorded, raised.value.offered) == (
            NOTE, {**NOTE, "quantity": 12}), (
            "the conflict on a refused key does not carry the recorded and the"
            " offered payloads as values: recorded"
            f" {raised.value.recorded!r}, offered {raised.value.offered!r}")
        assert later.calls == 0, (
            "another payload under a refused key ran the mutation: it is a"
            f" conflict; it ran {later.calls} times")
        refusal = conn.execute("SELECT refusal FROM requests").fetchone()[0]
        assert refusal == "oat-milk is not stocked", (
            "the conflicting call changed the key's recorded refusal:"
            f" {refusal!r}")


def test_a_failure_that_is_no_refusal_is_not_kept(mod, db):
    with opened(db) as conn:
        with pytest.raises(LookupError):
            said = mod.apply_checked(conn, "k-4", NOTE,
                                     Stocker(LookupError, "stock list unreachable"))
            pytest.fail("a failure that is no refusal (LookupError) was swallowed:"
                        f" apply_checked answered {said!r} instead of letting it"
                        " through")
        requests, notes = count_rows(conn, "requests"), count_rows(conn, "notes")
        assert requests == 0, (
            "a failure that is no refusal was recorded under the key like a"
            f" refusal: only Refused is kept; {requests} request rows")
        assert notes == 0, (
            f"a failed mutation kept what it wrote: {notes} notes, not 0")
        assert not conn.in_transaction, (
            "the failure left a transaction open on the connection")
        said = mod.apply_checked(conn, "k-4", NOTE, Stocker(None))
        assert said == ("applied", {"note": 1}), (
            "after a failure that is no refusal the key was not free: the retry"
            f" answered {said!r}")


PAYLOADS = st.dictionaries(
    st.sampled_from(["sku", "quantity", "text", "shelf"]),
    st.one_of(st.integers(-5, 50), st.text("ab ", max_size=3),
              st.lists(st.integers(0, 3), max_size=2)),
    min_size=1)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=PAYLOADS, other=PAYLOADS, same=st.booleans())
def test_a_payload_is_the_same_as_json_whatever_its_key_order(mod, db, first,
                                                              other, same):
    """Two payloads are one action when they are equal as JSON: a replay with
    the keys in another order is a replay, any other difference a conflict."""
    second = first if same else other
    key = f"k-{uuid.uuid4().hex}"  # a new key for every example
    post = Poster()
    with opened(db) as conn:
        said = mod.apply_checked(conn, key, first, post)
        assert said[0] == "applied", (
            f"the first call under a new key answered {said!r}, not 'applied'")
    rebuilt = dict(reversed(list(second.items())))  # another key order
    with opened(db) as conn:  # as a replacement process would
        if second == first:
            said = mod.apply_checked(conn, key, rebuilt, post)
            assert said[0] == "already_applied", (
                "the same payload with its keys in another order was not a"
                " replay: compare canonical JSON, not str(payload);"
                f" {first!r} then {rebuilt!r} answered {said!r}")
        else:
            with pytest.raises(EffectConflict) as raised:
                said = mod.apply_checked(conn, key, rebuilt, post)
                pytest.fail(f"the key {key!r} with another payload ({first!r}, then"
                            f" {rebuilt!r}) was not refused with an EffectConflict: it"
                            f" answered {said!r}")
            got = (raised.value.key, raised.value.recorded, raised.value.offered)
            assert got == (key, first, rebuilt), (
                "the conflict does not carry the key, the recorded payload and"
                f" the offered one, as values: {got!r}")
    assert post.calls == 1, (
        f"the mutation ran {post.calls} times for one key, not once:"
        f" {first!r} then {second!r}")


CHILD = """
import importlib.util, sys
from crashcourse.boundary import boundary
from crashcourse.store import opened

spec = importlib.util.spec_from_file_location("answer", sys.argv[1])
answer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(answer)


def post_then_hold(conn):
    conn.execute("INSERT INTO notes (text) VALUES ('24 cartons')")
    boundary("inside_mutation")  # the parent kills the process here
    return {"note": "never returned"}


with opened(sys.argv[2]) as conn:
    answer.apply_checked(conn, "k-9", {"sku": "oat-milk", "quantity": 24},
                         post_then_hold)
"""


def test_a_kill_inside_the_mutation_leaves_nothing_and_the_rerun_applies(mod, db):
    """A real process running your function is SIGKILLed while its mutation
    has written and not returned: the key must be free again, and a
    replacement applies the note once."""
    with Harness() as harness:
        running = harness.start(["-c", CHILD, mod.__file__, str(db)],
                                stop_at="inside_mutation")
        running.wait_for_boundary(timeout=30)
        running.kill()
    with opened(db) as conn:
        rows = (count_rows(conn, "requests"), count_rows(conn, "notes"))
        assert rows == (0, 0), (
            "a kill inside the mutation left the key or the note on file: the"
            " claim and the mutation must be one transaction;"
            f" (requests, notes) = {rows}, not (0, 0)")
        post = Poster()
        said = mod.apply_checked(conn, "k-9", NOTE, post)
        assert said == ("applied", {"note": 1}), (
            "after a kill inside the mutation the replacement did not apply the"
            f" key afresh: answered {said!r}")
        rows = (count_rows(conn, "requests"), count_rows(conn, "notes"))
        assert rows == (1, 1), (
            "the replacement's apply did not leave one request row and one"
            f" note: (requests, notes) = {rows}")


REPLAY = """
import importlib.util, json, sys
from crashcourse.store import opened

spec = importlib.util.spec_from_file_location("answer", sys.argv[1])
answer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(answer)


def post_again(conn):
    conn.execute("INSERT INTO notes (text) VALUES ('24 cartons')")
    return {"note": "posted by the replacement"}


with opened(sys.argv[2]) as conn:
    said = answer.apply_checked(conn, sys.argv[3], json.loads(sys.argv[4]),
                                post_again)
print(json.dumps(list(said)))
"""


def replay_in_a_fresh_process(mod, db, key, payload):
    """What ``apply_checked`` answers in a new process (nothing it kept in
    memory survives), and the notes then on file."""
    with Harness() as harness:
        finished = harness.run(["-c", REPLAY, mod.__file__, str(db), key,
                                json.dumps(payload)])
    assert finished.returncode == 0, (
        "the answer crashed when a new process replayed the key:"
        f" {finished.stderr[-2000:]}")
    with opened(db) as conn:
        notes = count_rows(conn, "notes")
    return tuple(json.loads(finished.stdout.strip().splitlines()[-1])), notes


@pytest.mark.parametrize("result", [{"note": 1}, [1, "two", None], "posted", 0,
                                    {"shelf": {"row": 3}, "text": "a b"}])
def test_a_replay_in_a_fresh_process_answers_from_the_stored_row(mod, db, result):
    """A replacement process replays the key: the answer comes from the row
    (its ``result`` column), not from anything the first process held."""
    with opened(db) as conn:
        def post(conn):
            conn.execute("INSERT INTO notes (text) VALUES ('24 cartons')")
            return result
        said = mod.apply_checked(conn, "k-5", NOTE, post)
        assert said == ("applied", result), (
            f"the first call answered {said!r}, not ('applied', {result!r})")
    row = stored(db, "k-5")
    assert row == (NOTE, result, None), (
        "the mutation's result is not stored as JSON in the request row: a"
        " replay in another process could not answer from it;"
        f" (payload, result, refusal) = {row!r}")
    replayed = replay_in_a_fresh_process(mod, db, "k-5", NOTE)
    assert replayed == (("already_applied", result), 1), (
        "a replay in a fresh process did not answer the stored result (kept in"
        f" memory instead?): (answer, notes) = {replayed!r}")


KILLED = """
import importlib.util, sys
from crashcourse.boundary import boundary
from crashcourse.store import opened

spec = importlib.util.spec_from_file_location("answer", sys.argv[1])
answer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(answer)
after = int(sys.argv[3])
returned = [False]
seen = [0]


def post(conn):
    conn.execute("INSERT INTO notes (text) VALUES ('24 cartons')")
    returned[0] = True
    return {"note": 1}


def starting(sql):  # SQLite calls this as each statement starts
    if returned[0]:
        seen[0] += 1
        if seen[0] == after:
            boundary("statement_after_mutation")  # the parent kills us here


with opened(sys.argv[2]) as conn:
    conn.set_trace_callback(starting)
    answer.apply_checked(conn, "k-7", {"sku": "oat-milk", "quantity": 24}, post)
"""
MOST_STATEMENTS = 40


def test_a_kill_after_the_mutation_returned_leaves_all_or_nothing(mod, tmp_path):
    """A real process is SIGKILLed as the first statement after its mutation
    returned starts, then (on a new file) the second, and so on until the
    answer ends first. Each time the file holds the note and the key's
    answer, result included, or neither; and a replacement process then
    answers the key once: the stored result, or a fresh apply."""
    for n in range(1, MOST_STATEMENTS + 1):
        db = tmp_path / f"shop-{n}.db"
        with opened(db) as conn:
            mod.install(conn)
            conn.execute("CREATE TABLE notes (text TEXT NOT NULL)")
        with Harness() as harness:
            running = harness.start(["-c", KILLED, mod.__file__, str(db), str(n)],
                                    stop_at="statement_after_mutation")
            try:
                running.wait_for_boundary(timeout=30)
            except BoundaryNotReached:
                ended = True  # the answer finished before statement n
            else:
                running.kill()
                ended = False
        with opened(db) as conn:
            notes = count_rows(conn, "notes")
        row = stored(db, "k-7")
        assert (notes, row) in ((0, None), (1, (NOTE, {"note": 1}, None))), (
            f"killed at statement {n} after the mutation returned: {notes} notes"
            f" and request row {row}")
        expected = (("already_applied", {"note": 1}) if notes else
                    ("applied", {"note": "posted by the replacement"}))
        assert replay_in_a_fresh_process(mod, db, "k-7", NOTE) == (expected, 1), (
            f"the replacement after a kill at statement {n}")
        if ended:
            assert notes == 1, "the answer returned, and its note is not on file"
            return
    pytest.fail(f"more than {MOST_STATEMENTS} statements after the mutation")


class RivalAfter:
    """Right after statement number ``n`` on the answer's connection (as its
    next one starts; SQLite's own statement trace, so every statement counts
    whichever call ran it), a rival connection applies the same key with the
    same payload: its request row, its result and its note, committed. It
    never waits: if the answer holds the write lock, the rival is blocked."""

    def __init__(self, conn, rival, n):
        self.conn, self.rival, self.n = conn, rival, n
        self.statements, self.rival_applied, self.fault = 0, False, None

    def __enter__(self):
        self.conn.set_trace_callback(self.starting)
        return self

    def __exit__(self, *exc):
        self.conn.set_trace_callback(None)
        if self.fault is not None:
            raise self.fault

    def starting(self, sql):
        try:
            if self.statements == self.n:
                self.rival_turn()
            self.statements += 1
        except BaseException as fault:  # sqlite3 would swallow it
            self.fault = fault

    def rival_turn(self):
        try:
            self.rival.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return  # blocked by the answer's write lock
        try:
            self.rival.execute(
                "INSERT INTO requests (key, payload, result)"
                " VALUES ('k-8', :payload, :result)",
                {"payload": canonical(NOTE), "result": canonical({"note": "rival"})})
            self.rival.execute("INSERT INTO notes (text) VALUES ('rival')")
            self.rival.execute("COMMIT")
            self.rival_applied = True
        except sqlite3.IntegrityError:  # the answer's row is there already
            self.rival.execute("ROLLBACK")


def test_a_rival_between_any_two_statements_is_answered_not_a_crash(mod, tmp_path):
    """Another process applies the same key between statement n and n+1 of
    the answer, for every n until the answer ends first: the answer must not
    crash, the note is posted once, and whoever wrote the row is the one
    the answer names (a replay of the rival's result, or its own apply)."""
    for n in range(1, MOST_STATEMENTS + 1):
        db = tmp_path / f"rival-{n}.db"
        with opened(db) as conn:
            mod.install(conn)
            conn.execute("CREATE TABLE notes (text TEXT NOT NULL)")
        post = Poster()
        with opened(db) as conn, opened(db, busy_timeout_ms=0) as rival:
            watched = RivalAfter(conn, rival, n)
            with watched:
                said = mod.apply_checked(conn, "k-8", NOTE, post)
            assert watched.statements > 0, (
                "no statement ran on the connection the answer was given")
            assert not conn.in_transaction, f"a transaction left open (rival at {n})"
            notes = [r[0] for r in conn.execute("SELECT text FROM notes")]
        if watched.rival_applied:
            assert (said, notes, post.calls) == (
                ("already_applied", {"note": "rival"}), ["rival"], 0), (
                f"the rival applied the key after statement {n}")
        else:
            assert (said, notes) == (("applied", {"note": 1}), ["24 cartons"]), (
                f"rival after statement {n}")
            row = stored(db, "k-8")
            assert row == (NOTE, {"note": 1}, None), (
                f"rival after statement {n}: the answer applied but its request"
                f" row does not hold the payload and result: {row!r}")
        if watched.statements <= n:  # the answer finished before the rival's turn
            return
    pytest.fail(f"more than {MOST_STATEMENTS} statements for one apply")
