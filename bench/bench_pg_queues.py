"""The PostgreSQL claims beside the queues a reader would pick instead, like
for like, in ONE run on one throwaway server (issue 24; make bench, in
.venv-bench).

    python bench/bench_pg_queues.py [--items 2000] [--workers 4 8] [--repeats 3]

THE WORK, the same on every side: ``--items`` queued items, each its own unit
(for ours, each its own session; for procrastinate, each its own ``lock``,
the library's one-job-at-a-time-per-lock rule standing for our one live turn
per session), drained by 4 and 8 worker processes that take items until
none is left and HOLD what they take. Each side in a fresh schema of the
same server; each worker connects and imports first, says it is ready, and
waits; the parent lets them all go at once. Each worker records the wall
time of its first and last take and every item it took (written after the
drain); rate = takes / (last - first over all workers). Double claims: items
two takes got, from the workers' records, and the rows in the taken state
afterwards.

The sides, and what each does per item taken:

* ``ours``: ``claims.claim`` on a ``postgresql://`` store (chapter 10,
  ``claims.postgres``): one call of the ``claim_next`` function the store
  installs, autocommitted: the store's lock SHARED, the database's clock,
  the pick with the session rule (``FOR UPDATE SKIP LOCKED``, the session's
  turns before it, the session's advisory try-lock), the grant that reads
  the rule again in a snapshot of its own and writes the claims row: one
  round trip, two rows written; the pause flag and the lease probe read on
  the way. (Until issue 24: the same statements sent one by one, four
  round trips.)
* ``bare``: bench_pg_claims.py's yardstick: the oldest queued turn ``FOR
  UPDATE SKIP LOCKED``, the grant and its claims row, COMMIT: three round
  trips, no session rule, no pause flag, no lease check.
* ``bare_one_trip``: the same pick, grant and claims row in ONE
  autocommitted statement (``bench_pg_claims.BARE_ONE_TRIP``): one round
  trip, two rows written, no rule: the floor for a one-trip claim.
* ``procrastinate``: its job fetch (``JobManager.fetch_job``: one call of
  its ``procrastinate_fetch_job_v2`` function, autocommitted), which skips a
  job whose lock another job holds and marks the job ``doing``: one round
  trip, one row written (plus its status-change trigger's event row).
* ``pgqueuer``: its dequeue (``Queries.dequeue``, batch of one): one
  statement that picks ``FOR UPDATE SKIP LOCKED`` and marks the job
  ``picked``: one round trip.

Writes bench/results/pg_queues.json (and the full run to artifacts/bench/).
bench_pg_claims.py (chapter 10's figure) is left as it is. Nothing here is
asserted by the test suite.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid

from crashcourse.validate import argument_parser

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results", "pg_queues.json")
SIDES = ("ours", "bare", "bare_one_trip", "procrastinate", "pgqueuer")
OURS_AND_BARE = SIDES[:3]  # the book's tables, on crashcourse's store
TTL = 600.0  # nothing expires during a drain
HEARTBEAT_H = 1  # pgqueuer re-picks a job whose heartbeat is older: never here


def conninfo(server_url: str, schema: str) -> str:
    """The server's address with ``schema`` first on the search path."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo(server_url, options=f"-c search_path={schema}")


# --- the peers' setup and take (async libraries, one loop per worker) -----------

def procrastinate_app(info: str):
    import procrastinate

    return procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=info, min_size=1, max_size=1))


async def procrastinate_fill(info: str, items: int) -> None:
    import psycopg

    app = procrastinate_app(info)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
    async with await psycopg.AsyncConnection.connect(info, autocommit=True) as conn:
        async with conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO procrastinate_jobs (queue_name, task_name, lock)"
                " VALUES ('default', 'hold', %s)",
                [(f"w{i:06d}",) for i in range(items)])


async def pgqueuer_fill(info: str, items: int) -> None:
    import psycopg
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.queries import Queries

    async with await psycopg.AsyncConnection.connect(info, autocommit=True) as conn:
        queries = Queries(PsycopgDriver(conn))
        await queries.install(create_schema=False)
        names = [f"w{i:06d}".encode() for i in range(items)]
        await queries.enqueue(["hold"] * items, names, [0] * items)


async def peer_drain(side: str, info: str) -> tuple[list[str], float | None, float]:
    """Connect, say ready, wait for the word, take until none is left."""
    import datetime

    import psycopg

    took, first = [], None
    if side == "procrastinate":
        app = procrastinate_app(info)
        async with app.open_async():
            worker_id = await app.job_manager.register_worker()
            print("ready", flush=True)
            sys.stdin.readline()
            while (job := await app.job_manager.fetch_job(
                    queues=None, worker_id=worker_id)) is not None:
                first = first or time.time()
                took.append(job.lock)
            return took, first, time.time()
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.queries import EntrypointExecutionParameter, Queries

    async with await psycopg.AsyncConnection.connect(info, autocommit=True) as conn:
        queries = Queries(PsycopgDriver(conn))
        entrypoints = {"hold": EntrypointExecutionParameter(concurrency_limit=0)}
        manager = uuid.uuid4()
        print("ready", flush=True)
        sys.stdin.readline()
        while jobs := await queries.dequeue(
                batch_size=1, entrypoints=entrypoints, queue_manager_id=manager,
                global_concurrency_limit=None,
                heartbeat_timeout=datetime.timedelta(hours=HEARTBEAT_H)):
            first = first or time.time()
            took.extend(job.payload.decode() for job in jobs)
        return took, first, time.time()


# --- one worker process -------------------------------------------------------------

def worker(side: str, address: str, owner: str, out: str) -> None:
    if side in ("procrastinate", "pgqueuer"):
        import asyncio

        took, first, last = asyncio.run(peer_drain(side, address))
    else:
        sys.path.insert(0, HERE)
        from bench_pg_claims import bare_claim, bare_one_trip_claim

        from crashcourse import claims, store

        took, first = [], None
        with store.opened(address, require=("work", "claims")) as conn:
            print("ready", flush=True)
            sys.stdin.readline()
            while True:
                if side == "ours":
                    got = claims.claim(conn, owner, ttl=TTL)
                    item = None if got is None else got.id
                else:
                    take = bare_claim if side == "bare" else bare_one_trip_claim
                    item = owner if take(conn, owner) else None
                if item is None:
                    break
                first = first or time.time()
                took.append(item)
        last = time.time()
    with open(out, "w") as record:
        json.dump({"took": took, "first": first, "last": last}, record)


# --- the parent ---------------------------------------------------------------------

def prepare(side: str, server_url: str, items: int) -> tuple[str, str]:
    """A fresh schema holding the side's queue with ``items`` items; the
    address a worker connects to, and the schema's name."""
    import asyncio

    if side in OURS_AND_BARE:
        sys.path.insert(0, HERE)
        import bench_pg_claims

        address = bench_pg_claims.prepare(server_url, items)
        return address, address.rsplit("schema=", 1)[1]
    from crashcourse.store import postgres as pgstore

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    pgstore.create_schema(server_url, schema)
    info = conninfo(server_url, schema)
    asyncio.run((procrastinate_fill if side == "procrastinate" else pgqueuer_fill)(
        info, items))
    return info, schema


def taken_in_rows(side: str, server_url: str, schema: str) -> dict:
    import psycopg

    query = {
        "ours": "SELECT count(*), count(*) FILTER (WHERE generation > 1)"
                " FROM work WHERE status = 'RUNNING'",
        "bare": "SELECT count(*), count(*) FILTER (WHERE generation > 1)"
                " FROM work WHERE status = 'RUNNING'",
        "bare_one_trip": "SELECT count(*), count(*) FILTER (WHERE generation > 1)"
                         " FROM work WHERE status = 'RUNNING'",
        "procrastinate": "SELECT count(*), 0 FROM procrastinate_jobs"
                         " WHERE status = 'doing'",
        "pgqueuer": "SELECT count(*), 0 FROM pgqueuer WHERE status = 'picked'",
    }[side]
    with psycopg.connect(conninfo(server_url, schema), autocommit=True) as conn:
        taken, doubled = conn.execute(query).fetchone()
        extra = 0
        if side in OURS_AND_BARE:  # a second claims row for one turn
            extra = conn.execute("SELECT count(*) - count(DISTINCT work_id)"
                                 " FROM claims").fetchone()[0]
    return {"taken": taken, "doubled_in_rows": doubled + extra}


def drain(side: str, server_url: str, workers: int, items: int, folder: str) -> dict:
    import subprocess
    from collections import Counter

    from crashcourse.store import postgres as pgstore

    address, schema = prepare(side, server_url, items)
    outs = [os.path.join(folder, f"{schema}-w{n}.json") for n in range(workers)]
    procs = [subprocess.Popen(
        [sys.executable, __file__, "--worker", side, "--address", address,
         "--owner", f"{side}{n}", "--out", out],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for n, out in enumerate(outs)]
    try:
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a {side} worker did not start")
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            proc.stdin.close()
            if proc.wait(timeout=600) != 0:
                raise RuntimeError(f"a {side} worker failed")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    records = [json.loads(open(out).read()) for out in outs]
    took = Counter(item for record in records for item in record["took"])
    if side in OURS_AND_BARE[1:]:  # the yardsticks return no id: the rows
        took = Counter()
    firsts = [r["first"] for r in records if r["first"] is not None]
    takes = sum(len(r["took"]) for r in records)
    span = max(r["last"] for r in records) - min(firsts)
    rows = taken_in_rows(side, server_url, schema)
    with pgstore.connect(server_url).raw as raw:
        raw.execute(f'DROP SCHEMA "{schema}" CASCADE')
    return {"takes": takes, "per_s": takes / span, "span_s": span,
            "double_claims": sum(1 for n in took.values() if n > 1)
            if side not in OURS_AND_BARE[1:] else rows["doubled_in_rows"],
            "rows": rows}


def main(argv=None) -> int:
    import argparse
    import statistics
    import tempfile

    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--workers", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--repeats", type=int, default=3)
    for hidden in ("--worker", "--address", "--owner", "--out"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.address, args.owner, args.out)
        return 0
    from importlib.util import find_spec

    from crashcourse.store import postgres_server

    if any(find_spec(name) is None for name in ("psycopg", "procrastinate",
                                                "pgqueuer")):
        print("skipped: run in .venv-bench (make bench)", file=sys.stderr)
        return 0
    sys.path.insert(0, HERE)
    from bench_journal import load_now, machine

    load_before = load_now()
    runs = {f"{side}/{n}": [] for n in args.workers for side in SIDES}
    with postgres_server.running() as server, tempfile.TemporaryDirectory() as folder:
        for repeat in range(args.repeats):
            keys = list(runs) if repeat % 2 == 0 else list(runs)[::-1]
            for key in keys:
                side, n = key.split("/")
                runs[key].append(drain(side, server.url, int(n), args.items, folder))
            print(f"[{repeat + 1}/{args.repeats}] drained, load {load_now()}",
                  file=sys.stderr)
        import psycopg

        with psycopg.connect(server.url) as conn:
            server_version = conn.execute("SHOW server_version").fetchone()[0]
            server_fsync = conn.execute("SHOW fsync").fetchone()[0]
    from importlib.metadata import version

    points = {key: {"per_s": round(statistics.median(r["per_s"] for r in done)),
                    "per_s_runs": [round(r["per_s"]) for r in done],
                    "double_claims": sum(r["double_claims"] for r in done),
                    "rows_taken": [r["rows"]["taken"] for r in done]}
              for key, done in runs.items()}

    def paired(n: int, a: str, b: str) -> float:
        """Median over repeats of a / b within each repeat."""
        return round(statistics.median(
            x / y for x, y in zip(points[f"{a}/{n}"]["per_s_runs"],
                                  points[f"{b}/{n}"]["per_s_runs"], strict=True)), 2)

    document = {
        "measured_on": time.strftime("%Y-%m-%d"),
        "machine": {**machine(), "postgresql": server_version,
                    "postgresql_fsync": server_fsync,
                    **{name: version(name) for name in ("psycopg", "procrastinate",
                                                        "pgqueuer")},
                    "load_avg_at_start": load_before, "load_avg_at_end": load_now()},
        "parameters": {"items": args.items, "workers": args.workers,
                       "repeats": args.repeats, "ttl_s": TTL},
        "points": points,
        "ours_over": {str(n): {peer: paired(n, "ours", peer) for peer in SIDES[1:]}
                      for n in args.workers},
        "ratio_is": "median over repeats of ours / peer in the same repeat",
        "targets": {"ours_over_bare": 0.9, "ours_over_each_library": 1.0},
    }
    from pathlib import Path

    from crashcourse.lab.evidence import new_run_path, write_exclusive

    root = Path(HERE).parent
    (root / "artifacts" / "bench").mkdir(parents=True, exist_ok=True)
    full = write_exclusive(new_run_path(root / "artifacts" / "bench", "pg_queues"),
                           {**document, "runs": runs})
    Path(RESULTS).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"points": points, "ours_over": document["ours_over"]}, indent=2))
    print(f"run {full}; summary {Path(RESULTS).relative_to(root)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
