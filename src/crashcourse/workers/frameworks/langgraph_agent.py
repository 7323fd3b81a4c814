"""The shop agent on LangGraph, with its SQLite checkpointer (chapter 12).

    python -m crashcourse.workers.frameworks.langgraph_agent --world DIR
        --api prebuilt|functional --durability async|sync|exit
        --key none|position|action

``--api prebuilt`` is LangGraph's prebuilt tool-calling agent (since
LangGraph 1.0 it is ``langchain.agents.create_agent``, a graph of a model
node and a tool node); ``--api functional`` is the same loop written with
LangGraph's functional API, an ``@entrypoint`` calling the model and each
tool as ``@task``s. Both checkpoint into ``DIR/checkpoints.sqlite``
(``SqliteSaver``) under the thread id ``restock-flour-TRIAL``, with the
``--durability`` given (LangGraph's default is ``async``).

The same command starts the run and resumes it, the way LangGraph documents
recovery: a thread with a checkpoint is invoked with ``None`` as its input
(it continues from its last checkpoint; a finished thread does nothing); a
thread with no checkpoint is started with the prompt.

The position key (``--key position``): the thread id and the
``tool_call_id`` of the model's call (prebuilt), or the thread id and the
id LangGraph gives the tool's task (functional).

Exit status 0 once the thread has finished; its last line on stdout is a
JSON summary (the experiment never grades by it).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from typing import Annotated

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, StructuredTool
from langgraph.checkpoint.sqlite import SqliteSaver

from crashcourse.validate import argument_parser
from crashcourse.workers.frameworks.shop import (
    FINAL,
    KEYS,
    PROMPT,
    ShopTools,
    World,
    checked_world,
    new_call_id,
    new_key,
    next_turn,
)

APIS = ("prebuilt", "functional")
DURABILITY = ("async", "sync", "exit")
STORE = "checkpoints.sqlite"


class ScriptedChatModel(BaseChatModel):
    """The scripted model as a LangChain chat model: the next message from
    the history it is shown, a fresh id on every tool call (chapter 12)."""

    @property
    def _llm_type(self) -> str:
        return "crashcourse-scripted"

    def bind_tools(self, tools, **kwargs):
        return self  # it knows its script; the tools' schemas change nothing

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        return ChatResult(generations=[ChatGeneration(message=reply(messages))])


def reply(messages: list) -> AIMessage:
    """The scripted model's answer to ``messages`` (chapter 12)."""
    turn = next_turn(sum(isinstance(m, ToolMessage) for m in messages))
    if turn is None:
        return AIMessage(content=FINAL)
    name, arguments = turn
    return AIMessage(content="", tool_calls=[
        {"name": name, "args": arguments, "id": new_call_id(), "type": "tool_call"}])


def plain_tools(shop: ShopTools, policy: str, thread: str) -> list:
    """The three tools as LangChain tools, keyed by ``policy`` (none or
    position: the thread and the model's ``tool_call_id``)."""

    def key(tool_call_id: str) -> str:
        return new_key() if policy == "none" else f"{thread}/{tool_call_id}"

    def reserve_stock(sku: str, quantity: int,
                      tool_call_id: Annotated[str, InjectedToolCallId]) -> dict:
        """Reserve stock for an order."""
        return shop.reserve_stock(sku, quantity, operation_key=key(tool_call_id))

    def place_order(sku: str, quantity: int, unit_cents: int,
                    tool_call_id: Annotated[str, InjectedToolCallId]) -> dict:
        """Place the order with the supplier."""
        return shop.place_order(sku, quantity, unit_cents,
                                operation_key=key(tool_call_id))

    def send_confirmation(to: str, subject: str, body: str,
                          tool_call_id: Annotated[str, InjectedToolCallId]) -> dict:
        """Mail the confirmation."""
        return shop.send_confirmation(to, subject, body,
                                      operation_key=key(tool_call_id))

    return [StructuredTool.from_function(f) for f in
            (reserve_stock, place_order, send_confirmation)]


def tools_for(world: World, policy: str, thread: str) -> list:
    """The agent's tools under ``policy``; ``action`` puts each behind the
    adapter (``crashcourse.adapters.langgraph.as_tool``)."""
    shop = ShopTools(world)
    if policy != "action":
        return plain_tools(shop, policy, thread)
    from crashcourse.adapters.langgraph import as_tool

    return [as_tool(effect) for effect in shop.guarded().values()]


def prebuilt(tools: list, saver: SqliteSaver):
    """LangGraph's prebuilt tool-calling agent (``create_agent``)."""
    from langchain.agents import create_agent

    return create_agent(ScriptedChatModel(), tools, checkpointer=saver)


def functional(tools: list, saver: SqliteSaver, world: World, policy: str):
    """The same agent with the functional API: an entrypoint whose model
    call and tool calls are tasks. The position key is the thread id and
    the tool task's own id."""
    from langgraph.func import entrypoint, task
    from langgraph.runtime import get_runtime

    shop = ShopTools(world)
    by_name = {t.name: t for t in tools}

    @task
    def call_model(messages: list) -> AIMessage:
        return reply(messages)

    @task
    def call_tool(tool_call: dict) -> ToolMessage:
        name, arguments = tool_call["name"], tool_call["args"]
        if policy == "action":
            result = by_name[name].invoke(arguments)
        else:
            info = get_runtime().execution_info
            key = (new_key() if policy == "none"
                   else f"{info.thread_id}/{info.task_id}")
            result = getattr(shop, name)(**arguments, operation_key=key)
        return ToolMessage(content=json.dumps(result), name=name,
                           tool_call_id=tool_call["id"])

    @entrypoint(checkpointer=saver)
    def agent(messages: list) -> list:
        while True:
            answer = call_model(messages).result()
            messages = [*messages, answer]
            if not answer.tool_calls:
                return messages
            messages += [call_tool(call).result() for call in answer.tool_calls]

    return agent


def run(args: argparse.Namespace) -> dict:
    world = World(args.world)
    thread = world.task
    conn = sqlite3.connect(world.path(STORE), check_same_thread=False)
    saver = SqliteSaver(conn)
    tools = tools_for(world, args.key, thread)
    graph = (prebuilt(tools, saver) if args.api == "prebuilt"
             else functional(tools, saver, world, args.key))
    config = {"configurable": {"thread_id": thread}}
    if saver.get_tuple(config) is None:  # no checkpoint: start the thread
        start = [HumanMessage(PROMPT)]
        graph.invoke({"messages": start} if args.api == "prebuilt" else start,
                     config, durability=args.durability)
        how = "started"
    else:  # LangGraph's recovery: the same thread, None as its input. Not
        # decided by ``get_state().next``: after an async kill it can be empty
        # while a finished task's writes wait to be applied (chapter 12).
        graph.invoke(None, config, durability=args.durability)
        how = "resumed"
    final = graph.get_state(config)
    messages = final.values.get("messages", []) if isinstance(final.values, dict) \
        else final.values or []
    return {"how": how, "finished": not final.next, "messages": len(messages)}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--world", required=True, help="the trial's folder")
    parser.add_argument("--api", choices=APIS, required=True)
    parser.add_argument("--durability", choices=DURABILITY, required=True)
    parser.add_argument("--key", choices=KEYS, required=True)
    return checked_world(parser, parser.parse_args(argv))


if __name__ == "__main__":
    print(json.dumps(run(parse())), flush=True)
    sys.exit(0)
