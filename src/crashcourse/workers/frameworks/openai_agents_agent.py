"""The shop agent on the OpenAI Agents SDK, resumed from its RunState (ch. 12).

    python -m crashcourse.workers.frameworks.openai_agents_agent --world DIR
        --key none|position|action

An ``Agent`` with the three tools as ``function_tool``s and the scripted
model as the SDK's ``Model`` interface (``get_response`` returns the next
scripted tool call, with a fresh ``call_…`` id, derived from the tool
results in its input; no network, tracing off), run by ``Runner.run``.

The SDK has no automatic crash recovery: a run lives in the process that
runs it. What it documents for carrying a run over a stop is ``RunState``,
"the durable pause/resume boundary for human-in-the-loop flows" that
"stores enough information to continue an interrupted run" (its
reference). A run stops at such a boundary only when a tool call needs
approval, so every tool here is ``needs_approval=True`` and this program
is its own approver: at each interruption it writes ``result.to_state()``
(``to_string()``) to ``DIR/openai-run-state.json`` (written whole, then
renamed: the file holds one complete state), then approves the pending
call and runs on from the state. The same command starts and resumes the
run: when that file exists it is read back (``RunState.from_string``), the
call pending in it approved again, and the run continued from there; what
the process did after its last write is lost with it.

The position key (``--key position``): the trial's task and the
``tool_call_id`` the SDK hands the tool in its ``ToolContext`` (the
model's id for the call, kept in the state with the pending approval).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # never exported

from agents import (  # noqa: E402  (after the tracing switch)
    Agent,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    RunState,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.tool_context import ToolContext  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from crashcourse.workers.frameworks.records import OPENAI_STATE  # noqa: E402
from crashcourse.workers.frameworks.shop import (  # noqa: E402
    FINAL,
    PROMPT,
    TOOLS,
    ShopTools,
    World,
    agent_parser,
    new_call_id,
    new_key,
    next_turn,
    parse_agent,
    serve_agent,
)

STATE = OPENAI_STATE  # the saved RunState, in the trial's folder
MAX_TURNS = 10


def tool_results(items) -> int:
    """How many tool results the model's input holds."""
    if isinstance(items, str):
        return 0
    return sum((item.get("type") if isinstance(item, dict)
                else getattr(item, "type", None)) == "function_call_output"
               for item in items)


class ScriptedModel(Model):
    """The scripted model behind the SDK's ``Model`` interface (chapter 12)."""

    async def get_response(self, system_instructions, input, model_settings,
                           tools, output_schema, handoffs, tracing, *,
                           previous_response_id=None, conversation_id=None,
                           prompt=None, **_) -> ModelResponse:
        turn = next_turn(tool_results(input))
        if turn is None:
            output = [ResponseOutputMessage(
                id="msg_final", type="message", role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=FINAL,
                                            annotations=[])])]
        else:
            name, arguments = turn
            output = [ResponseFunctionToolCall(
                type="function_call", id=f"fc_{name}", call_id=new_call_id(),
                name=name, arguments=json.dumps(arguments), status="completed")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the scripted model does not stream")


def tools_for(world: World, policy: str) -> list:
    """The three tools, each needing approval (the run's pause points)."""
    shop = ShopTools(world)
    if policy == "action":
        return [function_tool(effect.function, needs_approval=True)
                for effect in shop.guarded().values()]

    def key(ctx: ToolContext) -> str:
        return (new_key() if policy == "none"
                else f"{world.task}/{ctx.tool_call_id}")

    def reserve_stock(ctx: ToolContext, sku: str, quantity: int) -> dict:
        """Reserve stock for an order."""
        return shop.reserve_stock(sku, quantity, operation_key=key(ctx))

    def place_order(ctx: ToolContext, sku: str, quantity: int,
                    unit_cents: int) -> dict:
        """Place the order with the supplier."""
        return shop.place_order(sku, quantity, unit_cents, operation_key=key(ctx))

    def send_confirmation(ctx: ToolContext, to: str, subject: str,
                          body: str) -> dict:
        """Mail the confirmation."""
        return shop.send_confirmation(to, subject, body, operation_key=key(ctx))

    made = [function_tool(f, needs_approval=True)
            for f in (reserve_stock, place_order, send_confirmation)]
    assert [t.name for t in made] == list(TOOLS)
    return made


def save(path: Path, state: RunState) -> None:
    """The state written whole and durably, then renamed over the last."""
    scratch = path.with_suffix(".tmp")
    with open(scratch, "w") as out:
        out.write(state.to_string())
        out.flush()
        os.fsync(out.fileno())
    os.replace(scratch, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


async def run(args: argparse.Namespace) -> dict:
    set_tracing_disabled(True)
    world = World(args.world)
    agent = Agent(name="shop", instructions="Restock what runs low.",
                  model=ScriptedModel(), tools=tools_for(world, args.key))
    path = Path(world.path(STATE))
    if path.is_file():  # a run stopped at an interruption: continue it
        current = await RunState.from_string(agent, path.read_text())
        how = "resumed"
    else:
        current, how = PROMPT, "started"
    config = RunConfig(tracing_disabled=True, workflow_name="restock")
    pauses = 0
    while True:
        if isinstance(current, RunState):
            for pending in current.get_interruptions():
                current.approve(pending)  # this program is the approver
        result = await Runner.run(agent, current, max_turns=MAX_TURNS,
                                  run_config=config)
        if not result.interruptions:
            break
        current = result.to_state()
        save(path, current)  # what a resume continues from
        pauses += 1
    return {"how": how, "finished": result.final_output == FINAL,
            "pauses": pauses}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = agent_parser(__doc__)
    return parse_agent(parser, argv)


if __name__ == "__main__":
    serve_agent(run, parse())
