"""effects (chapter 01): operation keys and the apply-once boundary.

The boundary's rules run on both backends (``store_at``: a SQLite file, a
PostgreSQL schema, chapter 10); the race between two real processes on a file.
"""

import json
import subprocess
import sys

import pytest

from crashcourse import effects, store
from crashcourse.lab.harness import Harness
from crashcourse.store import count_rows, opened
from crashcourse.store.dialect import SQLITE
from crashcourse.workers import restock_note

NOTE = {"sku": "oat-milk", "quantity": 24, "text": "24 cartons of oat milk"}


def notes(conn) -> None:
    """The shop's own table, written in the same transaction as an effect."""
    conn.execute("CREATE TABLE notes (text TEXT NOT NULL)")


# ``conn`` (tests/conftest.py): a fresh store on each backend, with these:
pytestmark = pytest.mark.installs.with_args(effects.install, notes)


def in_transaction(conn) -> bool:
    if store.dialect(conn) is SQLITE:
        return conn.in_transaction
    return conn.raw.info.transaction_status.name != "IDLE"


def post(conn, text):
    conn.execute("INSERT INTO notes (text) VALUES (:text)", {"text": text})
    return {"notes": count_rows(conn, "notes")}


def test_operation_key_is_the_same_in_another_process():
    args = {"sku": "oat-milk", "quantity": 24}
    code = (
        "from crashcourse.effects import operation_key;"
        "print(operation_key('restock-7', 1, 'order', "
        "{'quantity': 24, 'sku': 'oat-milk'}))"
    )
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
        check=True,
    )
    assert there.stdout.strip() == effects.operation_key("restock-7", 1, "order", args)


def test_operation_key_changes_with_every_part():
    base = effects.operation_key("restock-7", 1, "order", {"sku": "oat-milk"})
    others = {
        effects.operation_key("restock-8", 1, "order", {"sku": "oat-milk"}),
        effects.operation_key("restock-7", 2, "order", {"sku": "oat-milk"}),
        effects.operation_key("restock-7", 1, "mail", {"sku": "oat-milk"}),
        effects.operation_key("restock-7", 1, "order", {"sku": "rye-bread"}),
    }
    assert base not in others and len(others) == 4


@pytest.mark.parametrize(
    ("task", "action", "args"),
    [("", "order", {}), ("t", "", {}), (None, "order", {}),
     ("t", "order", {"x": float("nan")}), ("t", "order", {"x": object()})],
)
def test_operation_key_refuses_parts_that_cannot_name_an_action(task, action, args):
    with pytest.raises((ValueError, TypeError)):
        effects.operation_key(task, 1, action, args)


def test_first_call_applies_and_a_replay_returns_the_recorded_result(conn):
    key = effects.operation_key("restock-7", 1, "note", {"sku": "oat-milk"})
    first = effects.apply_once(conn, key, NOTE, lambda c: post(c, NOTE["text"]))
    again = effects.apply_once(conn, key, NOTE, lambda c: post(c, NOTE["text"]))
    assert first == ("applied", {"notes": 1})
    assert again == ("already_applied", {"notes": 1})
    assert count_rows(conn, "notes") == 1


def test_a_changed_payload_is_a_conflict_and_writes_nothing(conn):
    effects.apply_once(conn, "k-1", NOTE, lambda c: post(c, NOTE["text"]))
    changed = {**NOTE, "quantity": 48}
    ran = []
    with pytest.raises(effects.EffectConflict) as raised:
        effects.apply_once(conn, "k-1", changed, lambda c: ran.append(post(c, "x")))
    assert (raised.value.recorded, raised.value.offered) == (NOTE, changed)
    assert ran == []
    assert count_rows(conn, "notes") == 1
    row = conn.execute("SELECT payload FROM effect_ledger").fetchone()
    assert json.loads(row["payload"]) == NOTE


def test_a_failing_mutation_leaves_no_ledger_row(conn):
    def half_then_fail(c):
        post(c, "half")
        raise RuntimeError("supplier catalogue unreachable")

    with pytest.raises(RuntimeError):
        effects.apply_once(conn, "k-2", NOTE, half_then_fail)
    assert count_rows(conn, "effect_ledger") == 0
    assert count_rows(conn, "notes") == 0
    assert effects.apply_once(conn, "k-2", NOTE, lambda c: post(c, "ok")).status == (
        "applied"
    )


@pytest.mark.parametrize("key", ["", "   ", None, 7, b"k"])
def test_bad_keys_are_refused_and_nothing_is_written(conn, key):
    with pytest.raises(ValueError):
        effects.apply_once(conn, key, NOTE, lambda c: post(c, "x"))
    assert count_rows(conn, "effect_ledger") == 0
    assert count_rows(conn, "notes") == 0


def test_a_payload_that_is_not_json_is_refused_before_the_transaction(conn):
    with pytest.raises((ValueError, TypeError)):
        effects.apply_once(conn, "k-3", {"q": float("inf")}, lambda c: post(c, "x"))
    assert not in_transaction(conn)
    assert count_rows(conn, "effect_ledger") == 0


def test_two_processes_racing_for_one_key_apply_it_exactly_once(tmp_path):
    db = tmp_path / "shop.db"
    with opened(db) as conn:
        restock_note.install(conn)
    args = ["-m", "crashcourse.workers.restock_note", "--db", str(db),
            "--task", "restock-7", "--sku", "oat-milk", "--quantity", "24"]
    with Harness() as harness:
        racers = [harness.start(args, stop_at="before_apply") for _ in range(2)]
        for racer in racers:
            racer.wait_for_boundary()
        for racer in racers:  # both leave the starting line together
            racer.release()
        finished = [racer.finish() for racer in racers]
    assert [f.returncode for f in finished] == [0, 0]
    statuses = sorted(json.loads(f.stdout)["status"] for f in finished)
    assert statuses == ["already_applied", "applied"]
    with opened(db) as conn:
        rows = restock_note.snapshot(conn)
    assert len(rows["restock_notes"]) == 1
    assert len(rows["effect_ledger"]) == 1
    assert rows["stock"] == [{"sku": "oat-milk", "on_order": 24}]


@pytest.mark.parametrize("step", [True, False, -1, 1.5, "", "  ", None])
def test_an_operation_key_needs_a_real_step(step):
    from crashcourse.effects import operation_key

    with pytest.raises((TypeError, ValueError)):
        operation_key("task-1", step, "charge", {"cents": 5})
    assert operation_key("task-1", 0, "charge", {}) != operation_key(
        "task-1", "reserve", "charge", {})


# --- guarantees (was tests/test_guarantees_payments.py): each test defends one
# guarantee against the one-line bug named in its docstring


def test_the_step_is_part_of_the_key():
    """Bug: the key is derived without the step number."""
    keys = {effects.operation_key("restock-7", step, "rename", {"file": "f001"})
            for step in range(1, 51)}
    assert len(keys) == 50


def test_thousands_of_argument_sets_never_share_a_key():
    """Bug: the key keeps too little of the digest (two actions, one key)."""
    keys = {effects.operation_key("restock-7", 1, "order", {"n": n})
            for n in range(5000)}
    assert len(keys) == 5000


# --- issue 23: what Python's == blurs, canonical JSON keeps apart ----------------

BLURRED = [1, 1.0, True]  # equal to Python, three payloads to JSON


def test_one_and_one_point_oh_and_true_are_three_operation_keys():
    """Bug: a key derived from a comparison Python makes (``1 == 1.0 ==
    True``): a retry with the amount as a float would reuse the int's key."""
    keys = {effects.operation_key("task", 1, "pay", {"amount": v}) for v in BLURRED}
    assert len(keys) == 3
    steps = {effects.operation_key("task", step, "pay", {}) for step in (1, "1")}
    assert len(steps) == 2


@pytest.mark.parametrize("first, again", [(a, b) for a in BLURRED for b in BLURRED
                                          if a is not b])
def test_a_key_used_with_1_is_not_replayed_for_1_0_or_true(conn, first, again):
    """Bug: the ledger compares decoded payloads (``==``) instead of their
    canonical JSON: ``{"n": 1.0}`` would replay ``{"n": 1}``'s result."""
    effects.install(conn)
    done = effects.apply_once(conn, "k-1", {"n": first}, lambda c: "first")
    assert done == ("applied", "first")
    with pytest.raises(effects.EffectConflict) as conflict:
        effects.apply_once(conn, "k-1", {"n": again}, lambda c: "second")
    assert conflict.value.recorded == {"n": first}
    assert type(conflict.value.recorded["n"]) is type(first)
    assert effects.apply_once(conn, "k-1", {"n": first}, lambda c: "x") == (
        "already_applied", "first")


def test_step_zero_is_a_step():
    """Bug: ``check_step`` refuses ``step <= 0``: "0 or more" says 0 is one."""
    assert effects.check_step(0) == 0
    assert effects.operation_key("task", 0, "plan", {}).startswith("task/0/plan/")
    for bad in (-1, True, 1.0):
        with pytest.raises(ValueError):
            effects.check_step(bad)


def test_a_bad_step_gets_no_operation_key_and_a_conflict_names_its_key():
    """Bugs: ``operation_key`` without ``check_step``; ``EffectConflict``
    without its message."""
    for bad in (-1, True, 1.5, "", None):
        with pytest.raises(ValueError):
            effects.operation_key("task", bad, "pay", {})
    conflict = effects.EffectConflict("k-1", {"n": 1}, {"n": 1.0})
    assert str(conflict) == "operation key 'k-1' is bound to another payload"
