"""The SQLite claims beside the embedded queues a reader would pick instead,
like for like, in ONE run (issue 24; make bench, in .venv-bench).

    python bench/bench_embedded_queues.py [--items 2000] [--processes 1 4 8]
                                          [--repeats 5] [--modes NORMAL FULL]

THE WORK, the same on every side: ``--items`` queued items, each its own unit
(for ours, each its own session, so the one-live-turn-per-session rule never
holds one back), drained by 1, 4 or 8 worker processes that each take items
until the queue has none and HOLD what they take (never acknowledge or
finish it). One SQLite file per run, WAL, every connection of the side in
the same ``synchronous`` mode, NORMAL then FULL.

The sides, and what each does per item taken:

* ``ours``: ``claims.claim`` (chapter 05, the runtime's own path): one
  ``BEGIN IMMEDIATE`` transaction that reads the pause flag, walks to the
  first eligible turn (``crashcourse.claims.turns``), bumps the work row's
  generation, owner and lease, and INSERTs a ``claims`` row (the history
  the fence and a lease probe read), then commits.
* ``litequeue`` (``LiteQueue.pop``): one ``BEGIN IMMEDIATE`` transaction with
  one ``UPDATE ... RETURNING`` of the oldest READY row to LOCKED; no history.
* ``persist-queue`` (``SQLiteAckQueue.get``, its acknowledged queue): a
  SELECT of the first ready row outside any write lock, then an UPDATE of
  that row's status to "unack" in a transaction of its own, which does not
  check that the row is still ready. Its lock against a second taker is a
  ``threading.Lock``: one process's threads, not other processes. Its
  constructor also puts every "unack" row back to ready (``auto_resume``):
  here every worker opens the queue before any starts taking, with
  ``auto_resume=False``, so no worker undoes another's.

Timed: every worker opens its queue, says it is ready, and waits; the parent
then lets them all go at once. Each worker records the wall time of its
first and last take and every item it took, in a file of its own written
after the drain (nothing is written per item beyond the side's own commit).
Rate: items taken / (last take - first take, over all workers); ours over a
peer is the median over repeats of the two rates of the same repeat, taken
one after the other.
DOUBLE CLAIMS: items that two takes got (from the workers' records), and, from the
queue's own rows afterwards, items in the taken state (ours: work rows
RUNNING and their ``claims`` rows, any with a generation above 1). Also
counted, in one process: SQL statements and COMMITs per take (SQLite's trace
callback) on each side's connections, and SQLite VM instructions per take,
at the start of a full queue and at its end. Medians of ``--repeats``; the
sides and process counts take turns.

Writes bench/results/embedded_queues.json (and the full run to
artifacts/bench/). Nothing here is asserted by the test suite.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time

from crashcourse.validate import argument_parser

SIDES = ("ours", "litequeue", "persist-queue")
MODES = ("NORMAL", "FULL")
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results", "embedded_queues.json")
LEASE_S = 3600.0  # ours: nothing expires during a drain


# --- each side: fill, open, take one, count from its rows -----------------------

def fill(side: str, db: str, items: int, mode: str) -> None:
    """Queue ``items`` items (untimed)."""
    if side == "ours":
        from crashcourse.claims import fence
        from crashcourse.store import connect, immediate

        conn = connect(db, synchronous=mode)
        fence.install(conn)
        with immediate(conn):  # one session per item, as bench_claims.py
            for i in range(items):
                conn.execute(
                    "INSERT INTO work (id, origin, session, prompt, subject, role,"
                    " created) VALUES (:id, :id, :id, 'restock', '', 'shop', :i)",
                    {"id": f"w{i:06d}", "i": i})
        conn.close()
    else:
        queue = open_queue(side, db, mode)
        for i in range(items):
            queue.put(f"w{i:06d}")
        close_queue(side, queue)


def open_queue(side: str, db: str, mode: str):
    """The side's handle on the file, every connection in ``mode``."""
    if side == "ours":
        from crashcourse.store import connect

        return connect(db, synchronous=mode)
    if side == "litequeue":
        from litequeue import LiteQueue

        queue = LiteQueue(db)  # sets WAL and synchronous=NORMAL itself
        queue.conn.execute(f"PRAGMA synchronous={mode}")
        return queue
    from persistqueue import SQLiteAckQueue

    queue = SQLiteAckQueue(db, auto_resume=False)  # WAL; one connection
    for conn in {id(c): c for c in (queue._conn, queue._putter)}.values():
        conn.execute(f"PRAGMA synchronous={mode}")
    return queue


def close_queue(side: str, queue) -> None:
    if side == "ours":
        queue.close()
    elif side == "litequeue":
        queue.conn.close()
    else:
        queue.close()


def connections(side: str, queue) -> list:
    if side == "ours":
        return [queue]
    if side == "litequeue":
        return [queue.conn]
    return list({id(c): c for c in (queue._conn, queue._putter)}.values())


def take(side: str, queue, owner: str):
    """Take the next item and hold it; its id, or None when there is none."""
    if side == "ours":
        from crashcourse import claims

        got = claims.claim(queue, owner, ttl=LEASE_S)
        return None if got is None else got.id
    if side == "litequeue":
        message = queue.pop()
        return None if message is None else message.data
    from persistqueue import Empty

    try:
        return queue.get(block=False, raw=True)["data"]
    except Empty:
        return None


def taken_in_rows(side: str, db: str) -> dict:
    """What the queue's own rows say was taken, after the drain."""
    conn = sqlite3.connect(db)
    try:
        if side == "ours":
            running, doubled = conn.execute(
                "SELECT count(*), sum(generation > 1) FROM work"
                " WHERE status = 'RUNNING'").fetchone()
            claims_rows = conn.execute("SELECT count(*) FROM claims").fetchone()[0]
            return {"taken": running, "claims_rows": claims_rows,
                    "generation_above_1": doubled or 0}
        if side == "litequeue":
            return {"taken": conn.execute(
                "SELECT count(*) FROM Queue WHERE status = 1").fetchone()[0]}
        table = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                             " AND name LIKE 'ack_queue%'").fetchone()[0]
        return {"taken": conn.execute(
            f"SELECT count(*) FROM `{table}` WHERE status = 2").fetchone()[0]}
    finally:
        conn.close()


# --- a worker process -------------------------------------------------------------

def worker(side: str, db: str, mode: str, owner: str, out: str) -> None:
    """Open, say ready, wait for the word, drain, then write what was taken."""
    queue = open_queue(side, db, mode)
    print("ready", flush=True)
    sys.stdin.readline()
    took, first = [], None
    while True:
        item = take(side, queue, owner)
        if item is None:
            break
        if first is None:
            first = time.time()
        took.append(item)
    last = time.time()
    close_queue(side, queue)
    with open(out, "w") as record:
        json.dump({"took": took, "first": first, "last": last}, record)


# --- the parent ---------------------------------------------------------------------

def drain(side: str, mode: str, processes: int, items: int, directory: str) -> dict:
    """One run: fill, start the workers, let them go at once, read the records."""
    import subprocess
    from collections import Counter

    db = os.path.join(directory, f"{side}-{mode}-{processes}-{time.monotonic_ns()}.db")
    if side == "persist-queue":  # persist-queue takes a folder
        os.mkdir(db)
    fill(side, db, items, mode)
    outs = [f"{db}.w{n}.json" for n in range(processes)]
    workers = [subprocess.Popen(
        [sys.executable, __file__, "--worker", side, "--db", db, "--mode", mode,
         "--owner", f"w{n}", "--out", out],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for n, out in enumerate(outs)]
    for proc in workers:  # every queue open before anyone takes
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"a {side} worker did not start")
    for proc in workers:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in workers:
        proc.stdin.close()
        if proc.wait(timeout=900) != 0:
            raise RuntimeError(f"a {side} worker failed")
    records = [json.loads(open(out).read()) for out in outs]
    took = Counter(item for record in records for item in record["took"])
    firsts = [r["first"] for r in records if r["first"] is not None]
    span = max(r["last"] for r in records) - min(firsts)
    rows_path = os.path.join(db, "data.db") if side == "persist-queue" else db
    return {"takes": sum(took.values()), "items_taken": len(took),
            "double_claims": sum(1 for n in took.values() if n > 1),
            "missing": items - len(took), "span_s": span,
            "per_s": sum(took.values()) / span if span > 0 else None,
            "rows": taken_in_rows(side, rows_path)}


def statements_per_take(side: str, mode: str, items: int, takes: int = 100) -> dict:
    """In one process, on a queue of ``items``: SQL statements (triggers
    included) and COMMITs per take, from SQLite's trace callback, and SQLite
    VM instructions per take (a progress handler called at every one), for
    the first ``takes`` takes and for the last ones: a cost that grows with
    the queue shows as more instructions at the start, when it is full.
    Filling and opening are not counted."""
    import tempfile
    from collections import Counter

    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "q.db")
        if side == "persist-queue":
            os.mkdir(db)
        fill(side, db, items, mode)
        queue = open_queue(side, db, mode)
        seen = Counter()

        def step() -> int:
            seen["vm"] += 1
            return 0  # go on

        def counted(phase: str) -> None:
            before = dict(seen)
            for _ in range(takes):
                if take(side, queue, "counter") is None:
                    raise RuntimeError(f"{side}: ran dry")
            seen[f"{phase}_vm"] = seen["vm"] - before.get("vm", 0)

        for conn in connections(side, queue):
            conn.set_trace_callback(
                lambda sql: seen.update(["statements", sql.split(None, 1)[0].upper()]))
            conn.set_progress_handler(step, 1)
        counted("first")
        for conn in connections(side, queue):  # untimed, uncounted: to the end
            conn.set_trace_callback(None)
            conn.set_progress_handler(None, 0)
        for _ in range(items - 2 * takes):
            take(side, queue, "counter")
        for conn in connections(side, queue):
            conn.set_progress_handler(step, 1)
        counted("last")
        close_queue(side, queue)
    return {"statements": round(seen["statements"] / takes, 2),
            "commits": round(seen["COMMIT"] / takes, 2),
            "writes": round((seen["UPDATE"] + seen["INSERT"] + seen["DELETE"])
                            / takes, 2),
            "vm_steps_first": round(seen["first_vm"] / takes),
            "vm_steps_last": round(seen["last_vm"] / takes)}


def versions() -> dict:
    from importlib.metadata import version

    return {name: version(name) for name in ("litequeue", "persist-queue")}


def summarize(runs: dict, parameters: dict) -> dict:
    """Per point (side/mode/processes): the median rate, each repeat's rate
    (the spread a shared disk leaves), double claims and missing items over
    every repeat, and what the rows said; ours over each peer, repeat by
    repeat."""
    import statistics

    points = {}
    for key, done in runs.items():
        points[key] = {
            "per_s": round(statistics.median(r["per_s"] for r in done)),
            "per_s_runs": [round(r["per_s"]) for r in done],
            "double_claims": sum(r["double_claims"] for r in done),
            "missing": sum(r["missing"] for r in done),
            "rows_taken": [r["rows"]["taken"] for r in done]}
    def paired(mode: str, n: int, peer: str) -> float:
        """The median over repeats of ours / peer in the same repeat, where
        the two ran one after the other: a slow spell of the shared disk
        falls on both."""
        ours, theirs = (points[f"{side}/{mode}/{n}"]["per_s_runs"]
                        for side in ("ours", peer))
        return round(statistics.median(a / b for a, b in zip(ours, theirs,
                                                             strict=True)), 2)

    ratios = {f"{mode}/{n}": {peer: paired(mode, n, peer) for peer in SIDES[1:]}
              for mode in parameters["modes"] for n in parameters["processes"]}
    return {"points": points, "ours_over_peer": ratios,
            "ratio_is": "median over repeats of ours / peer in the same repeat",
            "target": "ours >= 1.0x each peer"}


def main(argv=None) -> int:
    import argparse
    import tempfile
    from pathlib import Path

    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--from-artifact", type=Path, metavar="JSON",
                        help="measure nothing: the summary again from a saved run")
    parser.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    for hidden in ("--db", "--mode", "--owner", "--out"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.db, args.mode, args.owner, args.out)
        return 0
    root = Path(HERE).parent
    if args.from_artifact:
        saved = json.loads(args.from_artifact.read_text(encoding="utf-8"))
        document = {k: saved[k] for k in ("measured_on", "machine", "parameters",
                                          "per_take")}
        document |= summarize(saved["runs"], saved["parameters"])
        Path(RESULTS).write_text(json.dumps(document, indent=2) + "\n",
                                 encoding="utf-8")
        print(f"summary {Path(RESULTS).relative_to(root)} from {args.from_artifact}",
              file=sys.stderr)
        return 0
    sys.path.insert(0, HERE)
    from bench_journal import load_now, machine

    load_before = load_now()
    runs = {f"{side}/{mode}/{n}": [] for mode in args.modes for n in args.processes
            for side in SIDES}
    with tempfile.TemporaryDirectory(prefix="bench-queues-") as d:
        for repeat in range(args.repeats):
            keys = list(runs) if repeat % 2 == 0 else list(runs)[::-1]
            for key in keys:
                side, mode, n = key.split("/")
                runs[key].append(drain(side, mode, int(n), args.items, d))
            print(f"[{repeat + 1}/{args.repeats}] drained, load {load_now()}",
                  file=sys.stderr)
    parameters = {"items": args.items, "processes": args.processes,
                  "repeats": args.repeats, "modes": args.modes, "lease_s": LEASE_S}
    document = {
        "measured_on": time.strftime("%Y-%m-%d"),
        "machine": {**machine(), **versions(), "load_avg_at_start": load_before,
                    "load_avg_at_end": load_now()},
        "parameters": parameters,
        "per_take": {side: statements_per_take(side, "NORMAL", args.items)
                     for side in SIDES},
        **summarize(runs, parameters),
    }
    from crashcourse.lab.evidence import new_run_path, write_exclusive

    (root / "artifacts" / "bench").mkdir(parents=True, exist_ok=True)
    full = write_exclusive(new_run_path(root / "artifacts" / "bench",
                                        "embedded_queues"), {**document, "runs": runs})
    Path(RESULTS).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"points": document["points"],
                      "ratios": document["ours_over_peer"]}, indent=2))
    print(f"run {full}; summary {Path(RESULTS).relative_to(root)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
