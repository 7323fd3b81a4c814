"""The shop agent as a Temporal workflow whose calls are activities (ch. 12).

    python -m crashcourse.workers.frameworks.temporal_agent --world DIR
        --server HOST:PORT --key none|position|action

The WORKER process: it connects to a Temporal server (the experiment's dev
server), polls the task queue ``restock-flour-TRIAL`` for the workflow
``Restock`` and its activities, and waits for the workflow's result. The
workflow runs the agent loop: the scripted model is asked through an
activity (its answer, with the tool call's fresh id, is in the workflow's
history like any activity's result) and each tool call is an activity.
Each activity may run for ``START_TO_CLOSE`` seconds; an attempt that
does not report back by then (its worker was killed) is retried by the
server on whichever worker polls next.

The same command starts the run and resumes it: the workflow (id
``restock-flour-TRIAL``) is started only when the server has never seen
it; otherwise this worker just serves it, as Temporal documents: the server
keeps the history, and a new worker on the same task queue carries on.
Workflows are not cached (``max_cached_workflows=0``), so no task waits for
the killed worker's sticky queue to time out; and once the workflow is done
the worker lets an activity still running finish (for up to
``START_TO_CLOSE``), as a long-lived worker would, before it exits.

The position key (``--key position``): the workflow id and the activity id
(``activity.info()``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.service import RPCError
from temporalio.worker import Worker

from crashcourse.validate import argument_parser

with workflow.unsafe.imports_passed_through():
    from crashcourse.workers.frameworks.shop import (
        FINAL,
        KEYS,
        PROMPT,
        TOOLS,
        ShopTools,
        World,
        checked_world,
        new_key,
        scripted_reply,
    )

START_TO_CLOSE = 4.0  # seconds an activity attempt may take before a retry
RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200),
                    backoff_coefficient=1.0, maximum_attempts=20)


@activity.defn(name="call_model")
def call_model(history: list) -> dict:
    """The scripted model's next message (chapter 12)."""
    return scripted_reply(history)


@workflow.defn(name="Restock")
class Restock:
    """The agent loop; deterministic: every outside call is an activity."""

    @workflow.run
    async def run(self, prompt: str) -> list:
        history = [{"role": "user", "content": prompt}]
        options = {"start_to_close_timeout": timedelta(seconds=START_TO_CLOSE),
                   "retry_policy": RETRY}
        while True:
            message = await workflow.execute_activity("call_model", history,
                                                      **options)
            history.append(message)
            call = message["tool_call"]
            if call is None:
                return history
            result = await workflow.execute_activity(call["name"], call["args"],
                                                     **options)
            history.append({"role": "tool", "tool_call_id": call["id"],
                            "name": call["name"], "content": result})


def activities(world: World, policy: str) -> list:
    """The three tools as activities under ``policy``; ``action`` puts each
    behind the adapter (``crashcourse.adapters.temporal.as_activity``)."""
    shop = ShopTools(world)
    if policy == "action":
        from crashcourse.adapters.temporal import as_activity

        return [as_activity(effect)
                for effect in shop.guarded().values()]

    def activity_for(name: str):
        body = getattr(shop, name)

        @activity.defn(name=name)
        def call(arguments: dict) -> dict:
            info = activity.info()
            key = (new_key() if policy == "none"
                   else f"{info.workflow_id}/{info.activity_id}")
            return body(**arguments, operation_key=key)

        return call

    return [activity_for(name) for name in TOOLS]


async def serve(args: argparse.Namespace) -> dict:
    world = World(args.world)
    client = await Client.connect(args.server)
    handle = client.get_workflow_handle(world.task)
    try:
        await handle.describe()
        how = "served"
    except RPCError:  # never started: start it
        handle = await client.start_workflow(Restock.run, PROMPT, id=world.task,
                                             task_queue=world.task)
        how = "started"
    with ThreadPoolExecutor(max_workers=4) as pool:
        async with Worker(client, task_queue=world.task, workflows=[Restock],
                          activities=[call_model, *activities(world, args.key)],
                          activity_executor=pool, max_cached_workflows=0,
                          graceful_shutdown_timeout=timedelta(seconds=START_TO_CLOSE)):
            history = await handle.result()
    return {"how": how, "finished": history[-1]["content"] == FINAL,
            "messages": len(history)}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--world", required=True, help="the trial's folder")
    parser.add_argument("--server", required=True, help="the Temporal address")
    parser.add_argument("--key", choices=KEYS, required=True)
    return checked_world(parser, parser.parse_args(argv))


if __name__ == "__main__":
    print(json.dumps(asyncio.run(serve(parse()))), flush=True)
    sys.exit(0)
