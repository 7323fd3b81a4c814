"""The key's scope is asked at each call (chapter 12): one tool registered
once serves many runs, each its own action; a run resumed gets its own key
back; a deliberate repeat is its own effect only when it says so."""

from __future__ import annotations

import contextvars

import pytest

from crashcourse.adapters import EffectTool
from crashcourse.services import mail

RUN = contextvars.ContextVar("run")
ARGS = {"to": "owner@shop.example", "subject": "flour ordered"}


@pytest.fixture
def mailed(tmp_path):
    path = str(tmp_path / "mail.sqlite")
    mail.install(path)

    def notify(to: str, subject: str, *, operation_key: str) -> dict:
        return mail.submit(path, to, subject, "", {mail.KEY_HEADER: operation_key})

    def notified(to, subject, *, operation_key):
        return mail.probe_sent(path, operation_key)

    tool = EffectTool(notify, notified, journal_path=str(tmp_path / "e.sqlite"),
                      task=RUN.get, ttl=2.0, wait_s=1.0)
    return path, tool


def in_run(run: str, tool: EffectTool, **options):
    return contextvars.copy_context().run(lambda: (RUN.set(run), tool(**options))[1])


def test_two_runs_through_one_tool_are_two_actions(mailed):
    path, tool = mailed
    in_run("order-1", tool, **ARGS)
    in_run("order-2", tool, **ARGS)  # the same order placed by another workflow
    in_run("order-1", tool, **ARGS)  # order-1 resumed: its own key, nothing sent
    assert len(mail.messages(path)) == 2
    keys = {m["operation_key"].split("/")[0] for m in mail.messages(path)}
    assert keys == {"order-1", "order-2"}


def test_a_fixed_scope_folds_two_runs_into_one(tmp_path, mailed):
    """Negative control: the same tool with its scope fixed at construction
    (what the adapter did before) sends one message for two runs."""
    path, tool = mailed
    fixed = EffectTool(tool.body, tool.probe, journal_path=tool.journal_path,
                       task="worker-1", ttl=2.0, wait_s=1.0)
    in_run("order-1", fixed, **ARGS)
    in_run("order-2", fixed, **ARGS)
    assert len(mail.messages(path)) == 1


def test_a_deliberate_repeat_says_which_occurrence_it_is(mailed):
    path, tool = mailed
    in_run("order-1", tool, **ARGS)
    in_run("order-1", tool, **ARGS)  # without occurrence: the same action
    assert len(mail.messages(path)) == 1
    in_run("order-1", tool, **ARGS, occurrence=2)  # on purpose: a second one
    in_run("order-1", tool, **ARGS, occurrence=2)  # resumed: still two
    assert len(mail.messages(path)) == 2
    with pytest.raises(ValueError, match="occurrence must be an int >= 1"):
        in_run("order-1", tool, **ARGS, occurrence=0)


def test_a_scope_that_is_not_text_is_refused_before_anything_runs(mailed):
    path, tool = mailed
    with pytest.raises(ValueError, match="the task scope must be a non-empty"):
        in_run("", tool, **ARGS)
    assert mail.messages(path) == []


def test_langgraph_threads_scope_the_key(mailed):
    pytest.importorskip("langgraph")
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from crashcourse.adapters.langgraph import as_tool, thread_scope

    path, tool = mailed
    scoped = as_tool(EffectTool(tool.body, tool.probe, journal_path=tool.journal_path,
                                task=thread_scope, ttl=2.0, wait_s=1.0))

    class State(TypedDict):
        sent: dict

    def node(state: State) -> State:
        return {"sent": scoped.invoke(ARGS)}

    graph = StateGraph(State)
    graph.add_node("mail", node)
    graph.add_edge(START, "mail")
    graph.add_edge("mail", END)
    app = graph.compile()
    for thread in ("thread-a", "thread-b", "thread-a"):
        app.invoke({"sent": {}}, {"configurable": {"thread_id": thread}})
    assert sorted(m["operation_key"].split("/")[0] for m in mail.messages(path)) == [
        "thread-a", "thread-b"]
