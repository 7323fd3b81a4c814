"""Grades exercise 12.1: a key from the action survives a re-asked model."""

from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse.services.supplier.request import usable_key
from crashcourse.workers.frameworks.shop import SCRIPT, new_call_id, next_turn

TASK = "restock-flour-0042"
ORDER = {"id": "call_0a1b2c3d4e5f", "name": "place_order",
         "args": {"sku": "flour-25kg", "quantity": 6, "unit_cents": 2150}}
skus = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1,
               max_size=20)
arguments = st.fixed_dictionaries({"sku": skus,
                                   "quantity": st.integers(1, 10_000),
                                   "unit_cents": st.integers(1, 10**9)})


def call(args: dict, name: str = "place_order") -> dict:
    return {"id": new_call_id(), "name": name, "args": args}


def test_a_re_asked_model_gets_the_same_key(answer):
    """The scripted model asked twice from the same history: two ids, one key."""
    keys = answer("ch12", "action_key")
    first, again = (call(next_turn(1)[1]) for _ in range(2))
    assert first["id"] != again["id"], (
        "the grader's world, not your answer: the re-asked model was to mint a"
        f" new call id, and both are {first['id']!r}")
    one, two = keys.action_key(TASK, first), keys.action_key(TASK, again)
    assert one == two, (
        "the model asked again for the same order got another key: the key"
        " depends on the call's id, which a re-asked model mints anew; make it"
        f" from the task and the action; keys {one!r} and {two!r}")


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments)
def test_the_id_never_matters(answer, args):
    keys = answer("ch12", "action_key")
    one, two = keys.action_key(TASK, call(args)), keys.action_key(TASK, call(args))
    assert one == two, (
        "the same action under two call ids got two keys: the id must not"
        f" matter; args {args}, keys {one!r} and {two!r}")


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments)
def test_the_order_of_the_fields_changes_nothing(answer, args):
    keys = answer("ch12", "action_key")
    backwards = dict(reversed(list(args.items())))
    assert list(backwards) != list(args), (
        f"the grader's world, not your answer: {args} was not reversed")
    one, two = keys.action_key(TASK, call(args)), keys.action_key(TASK, call(backwards))
    assert one == two, (
        "the same arguments in another field order got another key: serialise"
        f" them with sorted keys; args {args}, keys {one!r} and {two!r}")


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments, arguments)
def test_another_action_is_another_key(answer, one, other):
    keys = answer("ch12", "action_key")
    key = keys.action_key(TASK, call(one))
    if one != other:
        assert key != keys.action_key(TASK, call(other)), (
            f"two different actions ({one} and {other}) got one key {key!r}:"
            " the key must cover every argument")
    assert key != keys.action_key("restock-sugar-7", call(one)), (
        f"the same action in two tasks got one key {key!r}: the task is part"
        " of the key")
    assert key != keys.action_key(TASK, call(one, name="cancel_order")), (
        f"place_order and cancel_order with the same arguments got one key"
        f" {key!r}: the tool's name is part of the key")


def test_every_tool_of_the_script_gets_its_own_key(answer):
    keys = answer("ch12", "action_key")
    made = {keys.action_key(TASK, call(args, name)) for name, args in SCRIPT}
    assert len(made) == len(SCRIPT), (
        f"the script's {len(SCRIPT)} tool calls got only {len(made)} keys:"
        " each action needs its own")


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments)
def test_the_supplier_accepts_the_key(answer, args):
    key = answer("ch12", "action_key").action_key(TASK, call(args))
    usable = usable_key(key)
    assert usable == key, (
        f"the supplier does not accept the key {key!r} as it is (it reads"
        f" {usable!r}): keep to the characters and length it takes")


def test_another_process_computes_the_same_key(answer, tree, tmp_path):
    """The process that resumes is never the one that made the key."""
    keys = answer("ch12", "action_key")
    module = sys.modules.get(keys.__name__)
    source = keys.__file__ if module is None else module.__file__
    program = (
        "import importlib.util, json, sys\n"
        "spec = importlib.util.spec_from_file_location('answer', sys.argv[1])\n"
        "mod = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(mod)\n"
        "print(mod.action_key(sys.argv[2], json.loads(sys.argv[3])))\n")
    there = subprocess.run(
        [sys.executable, "-c", program, source, TASK, json.dumps(ORDER)],
        capture_output=True, text=True, timeout=60)
    assert there.returncode == 0, (
        f"computing the key in another process failed (exit {there.returncode}):"
        f" {there.stderr[-2000:]}")
    here = keys.action_key(TASK, ORDER)
    assert there.stdout.strip() == here, (
        "another process computed another key for the same action: the digest"
        " is salted per process (Python's hash()); use a real digest such as"
        f" sha256; here {here!r}, there {there.stdout.strip()!r}")
