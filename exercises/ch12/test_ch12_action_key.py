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
    assert first["id"] != again["id"]
    assert keys.action_key(TASK, first) == keys.action_key(TASK, again)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments)
def test_the_id_never_matters(answer, args):
    keys = answer("ch12", "action_key")
    assert keys.action_key(TASK, call(args)) == keys.action_key(TASK, call(args))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments)
def test_the_order_of_the_fields_changes_nothing(answer, args):
    keys = answer("ch12", "action_key")
    backwards = dict(reversed(list(args.items())))
    assert list(backwards) != list(args)
    assert keys.action_key(TASK, call(args)) == keys.action_key(TASK, call(backwards))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments, arguments)
def test_another_action_is_another_key(answer, one, other):
    keys = answer("ch12", "action_key")
    if one != other:
        assert keys.action_key(TASK, call(one)) != keys.action_key(TASK, call(other))
    assert keys.action_key(TASK, call(one)) != keys.action_key("restock-sugar-7",
                                                               call(one))
    assert keys.action_key(TASK, call(one)) != keys.action_key(
        TASK, call(one, name="cancel_order"))


def test_every_tool_of_the_script_gets_its_own_key(answer):
    keys = answer("ch12", "action_key")
    made = {keys.action_key(TASK, call(args, name)) for name, args in SCRIPT}
    assert len(made) == len(SCRIPT)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments)
def test_the_supplier_accepts_the_key(answer, args):
    key = answer("ch12", "action_key").action_key(TASK, call(args))
    assert usable_key(key) == key


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
    assert there.returncode == 0, there.stderr
    assert there.stdout.strip() == keys.action_key(TASK, ORDER)
