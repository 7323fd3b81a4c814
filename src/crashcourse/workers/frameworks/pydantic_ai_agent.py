"""The shop agent on Pydantic AI, made durable by DBOS (chapter 12).

    python -m crashcourse.workers.frameworks.pydantic_ai_agent --world DIR
        --tools plain|step --key none|position|action

A Pydantic AI ``Agent`` with the ``DBOSDurability`` capability, run inside a
``@DBOS.workflow`` (DBOS's system database: ``DIR/dbos.sqlite``, workflow id
``restock-flour-TRIAL``). The capability makes each model request a DBOS
step; the model is the scripted one, as a Pydantic AI ``FunctionModel``, so
its tool calls, fresh ids included, are recorded with the step. The tools
are ``--tools plain`` (ordinary functions, run inside the workflow) or
``--tools step`` (each also a ``@DBOS.step``, as the integration's
documentation advises for tools that do I/O).

The same command starts and resumes the run: ``DBOS.launch()`` recovers the
workflow a killed process left pending, and the program waits for it.

The position key (``--key position``): the workflow id and the
``tool_call_id`` Pydantic AI hands the tool in its ``RunContext``.
"""

from __future__ import annotations

import argparse
import json
import sys

from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

from crashcourse.validate import argument_parser
from crashcourse.workers.frameworks.dbos_agent import STORE
from crashcourse.workers.frameworks.shop import (
    FINAL,
    KEYS,
    PROMPT,
    TOOLS,
    ShopTools,
    World,
    checked_world,
    new_call_id,
    new_key,
    next_turn,
)

TOOL_MODES = ("plain", "step")


def scripted(messages: list, info) -> ModelResponse:
    """The scripted model as a ``FunctionModel`` function (chapter 12)."""
    results = sum(isinstance(part, ToolReturnPart)
                  for message in messages for part in message.parts)
    turn = next_turn(results)
    if turn is None:
        return ModelResponse(parts=[TextPart(FINAL)])
    name, arguments = turn
    return ModelResponse(parts=[ToolCallPart(name, arguments,
                                             tool_call_id=new_call_id())])


def tools_for(world: World, policy: str, mode: str) -> list:
    """The three tools for the agent: plain functions or DBOS steps, keyed
    by ``policy``."""
    shop = ShopTools(world)
    if policy == "action":
        effects = shop.guarded()
        if mode == "plain":
            return [Tool(e.function, takes_ctx=False) for e in effects.values()]
        from crashcourse.adapters.dbos import as_step

        return [Tool(as_step(e), takes_ctx=False, name=e.name)
                for e in effects.values()]

    def with_key(name: str):
        method = getattr(shop, name)

        def body(**arguments):
            return method(**arguments)

        body.__name__ = body.__qualname__ = name
        if mode == "step":  # the body as a step; the key is chosen outside it
            body = DBOS.step(name=name)(body)

        def call(ctx: RunContext, **arguments) -> dict:
            key = (new_key() if policy == "none"
                   else f"{DBOS.workflow_id}/{ctx.tool_call_id}")
            return body(**arguments, operation_key=key)

        return call

    calls = {name: with_key(name) for name in TOOLS}

    def reserve_stock(ctx: RunContext, sku: str, quantity: int) -> dict:
        """Reserve stock for an order."""
        return calls["reserve_stock"](ctx, sku=sku, quantity=quantity)

    def place_order(ctx: RunContext, sku: str, quantity: int,
                    unit_cents: int) -> dict:
        """Place the order with the supplier."""
        return calls["place_order"](ctx, sku=sku, quantity=quantity,
                                    unit_cents=unit_cents)

    def send_confirmation(ctx: RunContext, to: str, subject: str,
                          body: str) -> dict:
        """Mail the confirmation."""
        return calls["send_confirmation"](ctx, to=to, subject=subject, body=body)

    return [Tool(f, takes_ctx=True)
            for f in (reserve_stock, place_order, send_confirmation)]


def run(args: argparse.Namespace) -> dict:
    world = World(args.world)
    DBOS(config={"name": "shop", "log_level": "ERROR",
                 "system_database_url": f"sqlite:///{world.path(STORE)}"})
    agent = Agent(FunctionModel(scripted), name="shop",
                  tools=tools_for(world, args.key, args.tools),
                  capabilities=[DBOSDurability()])

    @DBOS.workflow(name="restock")
    async def restock(prompt: str) -> str:
        return (await agent.run(prompt)).output

    DBOS.launch()  # recovers what a killed process left pending
    try:
        if DBOS.get_workflow_status(world.task) is not None:
            handle, how = DBOS.retrieve_workflow(world.task), "recovered"
        else:
            with SetWorkflowID(world.task):
                handle, how = DBOS.start_workflow(restock, PROMPT), "started"
        output = handle.get_result()
    finally:
        DBOS.destroy()
    return {"how": how, "finished": output == FINAL}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--world", required=True, help="the trial's folder")
    parser.add_argument("--tools", choices=TOOL_MODES, required=True)
    parser.add_argument("--key", choices=KEYS, required=True)
    return checked_world(parser, parser.parse_args(argv))


if __name__ == "__main__":
    print(json.dumps(run(parse())), flush=True)
    sys.exit(0)
