"""Grades exercise 12.3: the order desk's mail behind the adapter, killed for real.

The child process below runs the answer's tool once. The grader watches the
provider's ``mail.submit`` from inside that child: once the provider has
accepted the message, the child stops at the boundary ``accepted`` and is
SIGKILLed. The same child is then run again, as a framework's recovery
would run the tool again, and the provider's own rows are counted.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from crashcourse.lab.harness import BoundaryNotReached, Harness
from crashcourse.services import mail

TASK = "restock-flour-0042"
ORDER = {"sku": "flour-25kg", "quantity": 6}
CHILD = """
import importlib.util, json, sys
from crashcourse.boundary import boundary
from crashcourse.services import mail

submit = mail.submit

def watched(*args, **kwargs):
    boundary("submitting")  # the intent is recorded; the provider has nothing yet
    answer = submit(*args, **kwargs)
    boundary("accepted")  # the provider has the message; the tool has not returned
    return answer

mail.submit = watched
spec = importlib.util.spec_from_file_location("answer", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
tool = module.order_desk_tool(sys.argv[2], sys.argv[3], sys.argv[4])
print(json.dumps(tool(**json.loads(sys.argv[5]))))
"""


@pytest.fixture
def world(tmp_path):
    path = str(tmp_path / "mail.sqlite")
    mail.install(path)
    return path, str(tmp_path / "effects.sqlite")


def child(module, world, order=ORDER, task=TASK) -> list[str]:
    mail_path, journal_path = world
    return ["-c", CHILD, module.__file__, mail_path, journal_path, task,
            json.dumps(order)]


def test_a_kill_after_the_provider_accepted_leaves_one_message(answer, world):
    module = answer("ch12", "guard_tool")
    with Harness() as harness:
        worker = harness.start(child(module, world), stop_at="accepted")
        worker.wait_for_boundary()
        worker.kill()
        held = len(mail.messages(world[0]))
        assert held == 1, (  # it did leave before the kill
            "the grader's world, not your answer: killed after the provider"
            f" accepted, the provider was to hold one message, and holds {held}")
        again = harness.run(child(module, world))
    assert again.returncode == 0, again.stderr[-2000:]
    held = len(mail.messages(world[0]))
    assert held == 1, (
        f"the recovery mailed the desk again ({held} messages): the call in"
        " doubt must be asked about at the provider by the adapter's key (the"
        " header the message carries) before it is sent again")


def test_the_message_carries_the_adapters_key(answer, world):
    module = answer("ch12", "guard_tool")
    tool = module.order_desk_tool(world[0], world[1], TASK)
    tool(**ORDER)
    sent = mail.messages(world[0])
    assert len(sent) == 1, f"one call sent {len(sent)} messages, not one"
    (message,) = sent
    assert message["recipient"] == module.ORDER_DESK, (
        f"the message went to {message['recipient']!r}, not the order desk"
        f" {module.ORDER_DESK!r}")
    key = tool.key(**ORDER)
    assert message["operation_key"] == key, (
        "the message does not carry the adapter's key, so no probe can find"
        f" it: it carries {message['operation_key']!r}, the adapter's is {key!r}")


def test_a_finished_call_sends_nothing_again(answer, world):
    module = answer("ch12", "guard_tool")
    first = module.order_desk_tool(world[0], world[1], TASK)(**ORDER)
    again = module.order_desk_tool(world[0], world[1], TASK)(**ORDER)
    assert again == first, (
        "the finished call, made again, did not answer what it answered the"
        f" first time: {first}, then {again}")
    held = len(mail.messages(world[0]))
    assert held == 1, (
        f"the finished call, made again, sent again ({held} messages): the"
        " journal says it is done")


def test_another_order_is_another_message(answer, world):
    module = answer("ch12", "guard_tool")
    tool = module.order_desk_tool(world[0], world[1], TASK)
    tool(**ORDER)
    tool(**{**ORDER, "quantity": 7})
    held = len(mail.messages(world[0]))
    assert held == 2, (
        f"six sacks and seven sacks are two orders, and the desk got {held}"
        " messages: the key must cover the arguments")


def test_a_langgraph_agent_can_call_it(answer, world):
    """The adapter's LangChain tool: the model sees sku and quantity only."""
    if importlib.util.find_spec("langchain_core") is None:
        pytest.fail("this test runs LangChain's tool, which is not installed: pip"
                    " install -e '.[frameworks]' (make venv installs it)",
                    pytrace=False)
    from crashcourse.adapters.langgraph import as_tool

    module = answer("ch12", "guard_tool")
    tool = as_tool(module.order_desk_tool(world[0], world[1], TASK))
    assert set(tool.args) == {"sku", "quantity"}, (
        f"the model sees the tool's arguments {sorted(tool.args)}, not sku and"
        " quantity only")
    tool.invoke(ORDER)
    tool.invoke(ORDER)
    held = len(mail.messages(world[0]))
    assert held == 1, (
        f"the LangChain tool invoked twice for one order sent {held} messages")


NEXT_WEEK = "restock-flour-0049"  # another task placing the very same order


def test_the_same_order_for_two_tasks_is_two_messages(answer, world):
    """Six sacks this week and six next week are two orders: what the message
    says does not tell them apart, the adapter's key does."""
    module = answer("ch12", "guard_tool")
    this_week = module.order_desk_tool(world[0], world[1], TASK)
    next_week = module.order_desk_tool(world[0], world[1], NEXT_WEEK)
    this_week(**ORDER)
    next_week(**ORDER)
    keys = sorted(m["operation_key"] for m in mail.messages(world[0]))
    expected = sorted([this_week.key(**ORDER), next_week.key(**ORDER)])
    assert keys == expected, (
        "the same order for two tasks was not two messages under the two"
        " adapter keys: what the message says does not tell the orders apart,"
        f" the key does; keys sent {keys}, expected {expected}")


def test_a_lookalike_message_is_not_this_calls(answer, world):
    """Next week's call is SIGKILLed after its intent, before the provider got
    anything; this week's identical order is already in the provider. The
    resumed call's probe must not take this week's message for its own."""
    module = answer("ch12", "guard_tool")
    module.order_desk_tool(world[0], world[1], TASK)(**ORDER)
    with Harness() as harness:
        worker = harness.start(child(module, world, task=NEXT_WEEK),
                               stop_at="submitting")
        try:
            worker.wait_for_boundary()
        except BoundaryNotReached as never:
            pytest.fail("next week's call ended before it sent anything to the"
                        " provider (if it exited 0, it took this week's identical"
                        " message for its own: ask by the adapter's key, not by"
                        f" what the message says): {never}")
        worker.kill()
        held = len(mail.messages(world[0]))
        assert held == 1, (  # next week's never left
            "the grader's world, not your answer: killed before the provider got"
            f" next week's message, the provider was to hold this week's alone,"
            f" and holds {held}")
        again = harness.run(child(module, world, task=NEXT_WEEK))
    assert again.returncode == 0, again.stderr[-2000:]
    next_key = module.order_desk_tool(world[0], world[1], NEXT_WEEK).key(**ORDER)
    copies = mail.copies(world[0], next_key)
    assert copies == 1, (
        f"next week's order was sent {copies} times, not once: the probe took"
        " this week's identical message for its own; ask by the adapter's key,"
        " not by what the message says")
    held = len(mail.messages(world[0]))
    assert held == 2, f"the provider holds {held} messages, not this week's and next's"
