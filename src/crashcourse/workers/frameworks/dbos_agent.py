"""The shop agent as a DBOS workflow whose calls are steps (chapter 12).

    python -m crashcourse.workers.frameworks.dbos_agent --world DIR
        --key none|position|action [--tools step|plain]

A DBOS Transact workflow (``@DBOS.workflow``) runs the agent loop: the
scripted model is asked through a step (its answer, with the tool call's
fresh id, is recorded like any step's output) and each tool call is a step
(``@DBOS.step``), or with ``--tools plain`` a plain function the workflow
runs itself (what DBOS's documentation warns against for I/O). DBOS's
system database is a SQLite file, ``DIR/dbos.sqlite``; the workflow id is
the agent's task, ``restock-flour-TRIAL``.

The same command starts the run and resumes it, the way DBOS documents
recovery: ``DBOS.launch()`` recovers the workflows this executor left
pending (a killed process's); the program then waits for the workflow's
result, and starts it only when the system database has never seen it.

The position key (``--key position``): the workflow id and the step id DBOS
gives the tool's step (``DBOS.workflow_id``, ``DBOS.step_id``); for plain
tools, the workflow id and the model's tool-call id.

Exit status 0 once the workflow has finished; its last line on stdout is a
JSON summary (the experiment never grades by it).
"""

from __future__ import annotations

import argparse
import json
import sys

from dbos import DBOS, SetWorkflowID

from crashcourse.validate import argument_parser
from crashcourse.workers.frameworks.shop import (
    KEYS,
    PROMPT,
    TOOLS,
    ShopTools,
    World,
    checked_world,
    new_key,
    scripted_reply,
)

STORE = "dbos.sqlite"
TOOL_MODES = ("step", "plain")


def configure(world: World) -> None:
    """One DBOS per process, its system database in the trial's folder."""
    DBOS(config={"name": "shop", "log_level": "ERROR",
                 "system_database_url": f"sqlite:///{world.path(STORE)}"})


def tool_calls(world: World, policy: str, mode: str = "step") -> dict:
    """{name: call(call_id, arguments)} for the three tools under ``policy``:
    each a DBOS step (``mode="step"``) or a plain function run inside the
    workflow (``"plain"``). ``action`` puts each behind the adapter (as a
    step: ``crashcourse.adapters.dbos.as_step``)."""
    shop = ShopTools(world)
    if policy == "action":
        effects = shop.guarded()
        if mode == "step":
            from crashcourse.adapters.dbos import as_step

            effects = {name: as_step(effect) for name, effect in effects.items()}
        return {name: (lambda tool: lambda call_id, arguments: tool(**arguments))(
            effect) for name, effect in effects.items()}

    def call_for(name: str):
        body = getattr(shop, name)

        def step(arguments: dict) -> dict:  # the position: workflow and step id
            key = (new_key() if policy == "none"
                   else f"{DBOS.workflow_id}/{DBOS.step_id}")
            return body(**arguments, operation_key=key)

        if mode == "step":
            step.__name__ = step.__qualname__ = name
            as_step = DBOS.step(name=name)(step)
            return lambda call_id, arguments: as_step(arguments)

        def plain(call_id: str, arguments: dict) -> dict:  # position: the call id
            key = (new_key() if policy == "none"
                   else f"{DBOS.workflow_id}/{call_id}")
            return body(**arguments, operation_key=key)

        return plain

    return {name: call_for(name) for name in TOOLS}


def define(world: World, policy: str, mode: str = "step"):
    """The workflow and its steps, registered before ``DBOS.launch``."""
    tools = tool_calls(world, policy, mode)

    @DBOS.step(name="call_model")
    def call_model(history: list) -> dict:
        return scripted_reply(history)

    @DBOS.workflow(name="restock")
    def restock(prompt: str) -> list:
        history = [{"role": "user", "content": prompt}]
        while True:
            message = call_model(history)
            history.append(message)
            call = message["tool_call"]
            if call is None:
                return history
            result = tools[call["name"]](call["id"], call["args"])
            history.append({"role": "tool", "tool_call_id": call["id"],
                            "name": call["name"], "content": result})

    return restock


def run(args: argparse.Namespace) -> dict:
    world = World(args.world)
    configure(world)
    restock = define(world, args.key, args.tools)
    DBOS.launch()  # recovers what a killed process left pending
    try:
        known = DBOS.get_workflow_status(world.task) is not None
        if known:
            handle, how = DBOS.retrieve_workflow(world.task), "recovered"
        else:
            with SetWorkflowID(world.task):
                handle, how = DBOS.start_workflow(restock, PROMPT), "started"
        history = handle.get_result()
    finally:
        DBOS.destroy()
    return {"how": how, "finished": True, "messages": len(history)}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--world", required=True, help="the trial's folder")
    parser.add_argument("--key", choices=KEYS, required=True)
    parser.add_argument("--tools", choices=TOOL_MODES, default="step",
                        help="each tool a DBOS step (default) or plain code")
    return checked_world(parser, parser.parse_args(argv))


if __name__ == "__main__":
    print(json.dumps(run(parse())), flush=True)
    sys.exit(0)
