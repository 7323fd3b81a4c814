"""The shop agent as a Restate workflow whose calls are ``ctx.run`` steps
(chapter 12).

    python -m crashcourse.workers.frameworks.restate_agent --world DIR
        --ingress URL --admin URL --key none|position|action

The SERVICE process: it serves the workflow ``Restock`` (Restate's Python
SDK, an ASGI app under hypercorn, HTTP/2 on a loopback port kept in
``DIR/restate-service.json``), registers that deployment with the server
(its admin API, the same URI every time), submits the workflow run
``restock-flour-TRIAL`` through the ingress and waits for its result
(``attach``). The workflow runs the agent loop: the scripted model is asked
in a ``ctx.run`` step (its answer, with the tool call's fresh id, is in the
server's journal) and each tool call is a ``ctx.run`` step.

The same command starts the run and resumes it, as Restate documents:
"Restate uses an execution log for replay after failures and suspensions"
and, for a ``ctx.run`` step, "Restate replays the result instead of
re-executing the operation on retries" (its Python SDK's guide, journaling
results). The server keeps that log and retries an invocation whose service
went away, on whatever serves the deployment's URI: here the same command
started again. A step the service was killed inside has no result in the
log, so the retry runs it again. A workflow runs once per key: submitting
it again only attaches.

The position key (``--key position``): the workflow's key and the tool
call's id from the model's journaled answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import urllib.parse
from pathlib import Path

import restate
from hypercorn.asyncio import serve
from hypercorn.config import Config

from crashcourse.workers.frameworks.restate_server import request
from crashcourse.workers.frameworks.shop import (
    FINAL,
    PROMPT,
    TOOLS,
    ShopTools,
    World,
    agent_parser,
    new_key,
    parse_agent,
    scripted_reply,
    serve_agent,
)
from crashcourse.workers.frameworks.temporal_server import free_port

SERVICE = "restate-service.json"  # the deployment's port, kept for a resume
RESULT_WAIT_S = 120.0


def tool_bodies(world: World, policy: str) -> dict:
    """Each tool as ``body(args, key) -> result`` under ``policy``."""
    shop = ShopTools(world)
    if policy == "action":  # the key is the adapter's, from the action
        effects = shop.guarded()
        return {name: (lambda args, key, effect=effect: effect(**args))
                for name, effect in effects.items()}

    def keyed(method):
        return lambda args, key: method(**args, operation_key=key)

    return {name: keyed(getattr(shop, name)) for name in TOOLS}


def workflow_for(world: World, policy: str) -> restate.Workflow:
    bodies = tool_bodies(world, policy)
    flow = restate.Workflow("Restock")

    @flow.main()
    async def run(ctx: restate.WorkflowContext, prompt: str) -> dict:
        history = [{"role": "user", "content": prompt}]
        while True:
            message = await ctx.run_typed("call_model", scripted_reply,
                                          history=history)
            history.append(message)
            call = message["tool_call"]
            if call is None:
                return {"messages": len(history), "final": message["content"]}
            key = (new_key() if policy == "none"
                   else f"{ctx.key()}/{call['id']}")
            body = bodies[call["name"]]

            async def step(args=call["args"], key=key, body=body) -> dict:
                # off the event loop: a held or slow request never stalls
                # the SDK's connection to the server
                return await asyncio.to_thread(body, args, key)

            result = await ctx.run_typed(call["name"], step)
            history.append({"role": "tool", "tool_call_id": call["id"],
                            "name": call["name"], "content": result})

    return flow


def port_for(world: World) -> int:
    """The deployment's port: chosen once, kept for every resume."""
    path = Path(world.path(SERVICE))
    if path.is_file():
        return json.loads(path.read_text())["port"]
    port = free_port()
    path.write_text(json.dumps({"port": port}))
    return port


async def serve_and_wait(args: argparse.Namespace) -> dict:
    world = World(args.world)
    app = restate.app(services=[workflow_for(world, args.key)])
    port = port_for(world)
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.loglevel = "ERROR"
    config.accesslog = None
    stop = asyncio.Event()
    server = asyncio.create_task(serve(app, config, shutdown_trigger=stop.wait))
    try:
        uri = f"http://127.0.0.1:{port}"
        for _ in range(100):  # until hypercorn listens (bounded: 10 s)
            try:
                status, text = await asyncio.to_thread(
                    request, f"{args.admin}/deployments",
                    {"uri": uri, "force": True}, 10.0)
            except OSError as error:
                status, text = 0, str(error)
            if status in (200, 201):
                break
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError(f"registering {uri}: {status} {text[:300]}")
        key = urllib.parse.quote(world.task, safe="")
        status, text = await asyncio.to_thread(
            request, f"{args.ingress}/Restock/{key}/run/send", PROMPT, 10.0)
        how = ("started" if status in (200, 202)
               and json.loads(text).get("status") == "Accepted" else "served")
        if status not in (200, 202, 409):
            raise RuntimeError(f"submitting: {status} {text[:300]}")
        status, text = await asyncio.to_thread(
            request, f"{args.ingress}/restate/workflow/Restock/{key}/attach",
            None, RESULT_WAIT_S, "GET")
        if status != 200:
            raise RuntimeError(f"attaching: {status} {text[:300]}")
        output = json.loads(text)
    finally:
        stop.set()
        await asyncio.wait_for(server, 10.0)
    return {"how": how, "finished": output["final"] == FINAL,
            "messages": output["messages"]}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = agent_parser(__doc__)
    parser.add_argument("--ingress", required=True, help="the ingress URL")
    parser.add_argument("--admin", required=True, help="the admin URL")
    return parse_agent(parser, argv)


if __name__ == "__main__":
    serve_agent(serve_and_wait, parse())
