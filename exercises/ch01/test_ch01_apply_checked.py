"""Grades exercise 01.1 (apply_checked.py): applied, replayed, refused, or a
conflict, and a refusal kept under its key."""

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse.effects import EffectConflict
from crashcourse.lab.harness import Harness
from crashcourse.store import count_rows, opened

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


def test_first_call_applies_and_returns_the_result(mod, db):
    post = Poster()
    with opened(db) as conn:
        assert mod.apply_checked(conn, "k-1", NOTE, post) == ("applied", {"note": 1})
        assert count_rows(conn, "notes") == 1
        assert count_rows(conn, "requests") == 1


def test_a_replay_in_a_new_connection_returns_the_recorded_result(mod, db):
    post = Poster()
    with opened(db) as conn:
        mod.apply_checked(conn, "k-1", NOTE, post)
    with opened(db) as conn:  # as a replacement process would
        again = mod.apply_checked(conn, "k-1", dict(reversed(NOTE.items())), post)
        assert count_rows(conn, "notes") == 1
    assert again == ("already_applied", {"note": 1})
    assert post.calls == 1


def test_a_changed_payload_is_refused_and_nothing_moves(mod, db):
    post = Poster()
    with opened(db) as conn:
        mod.apply_checked(conn, "k-1", NOTE, post)
        with pytest.raises(EffectConflict):
            mod.apply_checked(conn, "k-1", {**NOTE, "quantity": 48}, post)
        assert post.calls == 1
        assert count_rows(conn, "notes") == 1
        row = conn.execute("SELECT payload FROM requests").fetchone()
        assert json.loads(row[0]) == NOTE
        assert not conn.in_transaction


def test_a_failing_mutation_leaves_no_request_row(mod, db):
    def fail_halfway(conn):
        conn.execute("INSERT INTO notes (text) VALUES ('half')")
        raise RuntimeError("supplier catalogue unreachable")

    with opened(db) as conn:
        with pytest.raises(RuntimeError):
            mod.apply_checked(conn, "k-2", NOTE, fail_halfway)
        assert count_rows(conn, "requests") == 0
        assert count_rows(conn, "notes") == 0
        assert mod.apply_checked(conn, "k-2", NOTE, Poster())[0] == "applied"


@pytest.mark.parametrize("key", ["", "  ", None, 42])
def test_bad_keys_are_refused_before_anything_is_written(mod, db, key):
    post = Poster()
    with opened(db) as conn:
        with pytest.raises(ValueError):
            mod.apply_checked(conn, key, NOTE, post)
        assert count_rows(conn, "requests") == 0
    assert post.calls == 0


def test_a_refusal_is_kept_and_a_replay_hears_it(mod, db):
    stock = Stocker(mod.Refused)
    with opened(db) as conn:
        with pytest.raises(mod.Refused) as first:
            mod.apply_checked(conn, "k-3", NOTE, stock)
        assert first.value.reason == "oat-milk is not stocked"
        assert count_rows(conn, "notes") == 0  # what it wrote before refusing
        row = conn.execute("SELECT payload, refusal FROM requests").fetchone()
        assert (json.loads(row["payload"]), row["refusal"]) == (
            NOTE, "oat-milk is not stocked")
        assert not conn.in_transaction
    stock.fails_with = None  # oat milk is stocked now: the key still says no
    with opened(db) as conn:  # as a replacement process would
        with pytest.raises(mod.Refused) as again:
            mod.apply_checked(conn, "k-3", dict(reversed(NOTE.items())), stock)
        assert again.value.reason == "oat-milk is not stocked"
        assert count_rows(conn, "notes") == 0
        assert count_rows(conn, "requests") == 1
    assert stock.calls == 1


def test_a_refused_key_with_another_payload_is_still_a_conflict(mod, db):
    with opened(db) as conn:
        with pytest.raises(mod.Refused):
            mod.apply_checked(conn, "k-3", NOTE, Stocker(mod.Refused))
        later = Stocker(None)
        with pytest.raises(EffectConflict):
            mod.apply_checked(conn, "k-3", {**NOTE, "quantity": 12}, later)
        assert later.calls == 0
        assert conn.execute("SELECT refusal FROM requests").fetchone()[0] == (
            "oat-milk is not stocked")


def test_a_failure_that_is_no_refusal_is_not_kept(mod, db):
    with opened(db) as conn:
        with pytest.raises(LookupError):
            mod.apply_checked(conn, "k-4", NOTE,
                              Stocker(LookupError, "stock list unreachable"))
        assert count_rows(conn, "requests") == 0
        assert count_rows(conn, "notes") == 0
        assert not conn.in_transaction
        assert mod.apply_checked(conn, "k-4", NOTE, Stocker(None)) == (
            "applied", {"note": 1})


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
        assert mod.apply_checked(conn, key, first, post)[0] == "applied"
    rebuilt = dict(reversed(list(second.items())))  # another key order
    with opened(db) as conn:  # as a replacement process would
        if second == first:
            assert mod.apply_checked(conn, key, rebuilt, post)[0] == (
                "already_applied")
        else:
            with pytest.raises(EffectConflict):
                mod.apply_checked(conn, key, rebuilt, post)
    assert post.calls == 1


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
        assert (count_rows(conn, "requests"), count_rows(conn, "notes")) == (0, 0)
        post = Poster()
        assert mod.apply_checked(conn, "k-9", NOTE, post) == ("applied", {"note": 1})
        assert (count_rows(conn, "requests"), count_rows(conn, "notes")) == (1, 1)
