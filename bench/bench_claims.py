"""Chapter 05-06 claim costs at scale, measured side by side in one run (make bench).

* Claim cost against the number of LIVE CLAIMS (leases of other sessions that
  have not run out) and against a BLOCKED BACKLOG (READY turns queued behind
  one running turn of ONE session), 0 to 10,000 rows. Each point is a fresh
  database filled by direct INSERTs, its WAL checkpointed, then ``--claims``
  calls of ``claims.claim`` (the real code path, one transaction each, the
  pause flag and the claims row included) that take READY turns of other,
  newer sessions, each timed on its own (after 20 untimed ones; the claims
  taken add up to 240 live claims of their own at every point; 20 more then
  count SQLite VM instructions, a cost no other process on the machine can
  move). A point's cost is the median of its claims (the mean, WAL
  checkpoints included, is recorded beside it); each point runs in a child
  process of its own, the points of a repeat run in a shuffled order, and
  every figure is the median over ``--repeats``. A ratio compares a point
  with the empty queue OF THE SAME REPEAT (``0``), then takes the median of
  those ratios.
* Claims per second with 4 processes draining ``--items`` queued turns (each
  its own session; 3600 s leases, so nothing expires): the rate comes from the
  durable claim timestamps, first to last, so process start-up is not
  counted. Double claims: turns with more than one claim. Next to it, one
  process, and a raw-SQL claim loop (``UPDATE ... WHERE id = (SELECT ...
  LIMIT 1)`` plus a log row) on the same items.
* The fence per write: ``fence.observe`` next to the same INSERT in a bare
  ``BEGIN IMMEDIATE`` transaction, one process.
* ``--baseline-rev REV`` (default: the runtime before the walk of
  ``crashcourse.claims.turns``): every claim measurement also runs on the runtime of
  git REV, extracted with ``git archive``, interleaved with the current one.

Writes the figures' data to bench/results/claims_scaling.json (committed; the
book draws from it) and the full record to artifacts/bench/. Nothing here is
asserted by the test suite.

    python bench/bench_claims.py [--repeats R] [--claims N] [--items N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from crashcourse import claims
from crashcourse.store import connect, immediate

try:
    from crashcourse.claims import fence
except ImportError:  # the baseline runtime (git BASELINE_REV): fence stood alone
    from crashcourse import fence

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "claims_scaling.json"
BASELINE_REV = "9c7a6ae"  # the last commit whose claim query walked every row
PROCESSES = 4
SIZES = (0, 500, 1000, 2000, 4000, 6000, 8000, 10000)
TARGETS = {"cost_8000_over_empty": 1.25, "claims_per_s_4_processes": 5000}
RAW_CLAIM = """
UPDATE work SET status = 'RUNNING', owner = :owner, generation = generation + 1,
    expires = :expires
WHERE id = (SELECT id FROM work WHERE status = 'READY' ORDER BY created LIMIT 1)
RETURNING id, generation
"""
ROW = ("INSERT INTO work (id, origin, session, prompt, subject, role, created,"
       " status, owner, generation, expires) VALUES (:id, :id, :session,"
       " 'restock', '', 'shop', :created, :status, :owner, :generation, :expires)")


# --- one point: a database in a given state, then timed claims ------------------

def fill(conn, kind: str, size: int, claims_to_time: int, now: float) -> None:
    """``size`` live claims or blocked turns, oldest first, then the turns the
    timed claims take (newest, one session each)."""
    held = {"status": claims.RUNNING, "owner": "holder", "generation": 1,
            "expires": now + 7200}
    queued = {"status": claims.READY, "owner": None, "generation": 0, "expires": None}
    rows = []
    if kind == "live":  # other sessions' leases, none run out
        rows += [held | {"session": f"held-{i}"} for i in range(size)]
    else:  # one session: one running turn, ``size`` READY turns behind it
        rows += [held | {"session": "busy"}]
        rows += [queued | {"session": "busy"} for _ in range(size)]
    rows += [queued | {"session": f"new-{i}"} for i in range(claims_to_time + 40)]
    with immediate(conn):
        for created, row in enumerate(rows):
            conn.execute(ROW, row | {"id": f"w{created:06d}", "created": created})


def point(kind: str, size: int, claims_to_time: int, db: str) -> dict:
    """Time ``claims_to_time`` claims on a fresh database (runs in a child)."""
    now = time.time()
    conn = connect(db)
    fence.install(conn)
    fill(conn, kind, size, claims_to_time, now)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for _ in range(20):  # warm the statement cache and the pages
        claims.claim(conn, "bench", ttl=3600)
    times = []
    for _ in range(claims_to_time):
        start = time.perf_counter()
        claim = claims.claim(conn, "bench", ttl=3600)
        times.append(time.perf_counter() - start)
        if claim is None or not claim.session.startswith("new-"):
            raise SystemExit(f"wrong claim at {kind} {size}: {claim}")
    steps = [0]  # then 20 more, counting SQLite VM instructions: cost without a clock

    def count() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(count, 1)
    for _ in range(20):
        claims.claim(conn, "bench", ttl=3600)
    conn.close()
    return {"mean_us": round(statistics.fmean(times) * 1e6, 1),
            "median_us": round(statistics.median(times) * 1e6, 1),
            "vm_steps": steps[0] / 20}


# --- claims per second, several processes ------------------------------------------

def raw_loop(conn, owner: str) -> None:
    """The peer: claim the oldest READY row and log it, nothing else."""
    while True:
        with immediate(conn):
            now = time.time()
            row = conn.execute(RAW_CLAIM, {"owner": owner,
                                           "expires": now + 3600}).fetchone()
            if row is None:
                return
            conn.execute("INSERT INTO raw_log (work_id, generation, at)"
                         " VALUES (:id, :generation, :at)",
                         {"id": row["id"], "generation": row["generation"], "at": now})


def ours_loop(conn, owner: str) -> None:
    while claims.claim(conn, owner, ttl=3600) is not None:
        pass


def worker(kind: str, db: str, owner: str) -> None:
    """Run one loop; a busy timeout under heavy contention restarts it (the
    rows already claimed stay claimed, so nothing is counted twice)."""
    conn = connect(db)
    for _ in range(50):
        try:
            return (raw_loop if kind == "raw" else ours_loop)(conn, owner)
        except sqlite3.OperationalError as busy:
            if "locked" not in str(busy):
                raise
    conn.close()


def prepare(db: Path, items: int) -> None:
    conn = connect(db)
    fence.install(conn)
    conn.execute("CREATE TABLE raw_log (work_id TEXT, generation INTEGER, at REAL)")
    with immediate(conn):
        for i in range(items):
            conn.execute(
                "INSERT INTO work (id, origin, session, prompt, subject, role,"
                " created) VALUES (:id, :id, :id, 'restock', '', 'shop', :i)",
                {"id": f"w{i:06d}", "i": i})
    conn.close()


def throughput(kind: str, items: int, directory: Path, env: dict,
               processes: int = PROCESSES) -> dict:
    db = directory / f"{kind}-{time.monotonic_ns()}.db"
    child([("--prepare", str(items)), ("--db", str(db))], env)
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", kind,
                               "--db", str(db), "--owner", f"{kind}{n}"], env=env)
             for n in range(processes)]
    for proc in procs:
        if proc.wait(timeout=900) != 0:
            raise SystemExit(f"a {kind} worker failed")
    conn = connect(db)
    table, column = ("raw_log", "at") if kind == "raw" else ("claims", "claimed_at")
    first, last, claimed = conn.execute(
        f"SELECT min({column}), max({column}), count(*) FROM {table}").fetchone()
    doubles = conn.execute("SELECT count(*) FROM work WHERE generation > 1"
                           ).fetchone()[0]
    if kind != "raw":  # the claims table too: a second row for one turn
        doubles += conn.execute("SELECT count(*) FROM claims WHERE generation > 1"
                                ).fetchone()[0]
    conn.close()
    return {"claims": claimed, "per_second": round(claimed / (last - first), 1),
            "double_claims": doubles}


def fence_cost(writes: int, directory: Path) -> dict:
    conn = connect(directory / f"fence-{time.monotonic_ns()}.db")
    fence.install(conn)
    claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    claim = claims.claim(conn, "w", ttl=3600)
    message = {"text": "ordering 6 sacks"}
    start = time.perf_counter()
    for _ in range(writes):
        fence.observe(conn, claim, message)
    fenced = (time.perf_counter() - start) / writes
    start = time.perf_counter()
    for _ in range(writes):
        with immediate(conn):
            conn.execute("INSERT INTO transcript (work_id, generation, message)"
                         " VALUES (:id, 1, '{}')", {"id": claim.id})
    bare = (time.perf_counter() - start) / writes
    conn.close()
    return {"fenced_us": round(fenced * 1e6, 1), "bare_us": round(bare * 1e6, 1),
            "fence_cost_us": round((fenced - bare) * 1e6, 1),
            "ratio": round(fenced / bare, 2)}


# --- the parent: runtimes, interleaving, medians -------------------------------

def child(options: list[tuple[str, str]], env: dict) -> dict | None:
    """Run this file with ``options`` under ``env`` (which runtime); its JSON."""
    argv = [sys.executable, __file__, *[part for pair in options for part in pair]]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:])} failed:\n{done.stderr}")
    return json.loads(done.stdout) if done.stdout.strip() else None


def runtime_env(src: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(src)}


def extract(rev: str, into: Path) -> Path | None:
    """The runtime (src/) of git ``rev`` in ``into``, or None without git history."""
    archive = into / "baseline.tar"
    made = subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive),
                           rev, "src"], capture_output=True, text=True)
    if made.returncode != 0:
        print(f"no baseline: {made.stderr.strip()}", file=sys.stderr)
        return None
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def median_of(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def series(runs: list[dict], sizes) -> dict:
    """Per size, over the repeats: the median of the points' median claim
    (``cost_us``, what the ratios use: one claim slowed by another process on
    a shared machine does not move it) and of their mean (``mean_us``, WAL
    checkpoints included); and each size over the same repeat's empty queue."""
    def over_empty(stat: str) -> list[float]:
        return [median_of([run[n][stat] / run[0][stat] for run in runs])
                for n in sizes]

    return {"cost_us": [median_of([run[n]["median_us"] for run in runs])
                        for n in sizes],
            "mean_us": [median_of([run[n]["mean_us"] for run in runs]) for n in sizes],
            "vm_steps": [median_of([run[n]["vm_steps"] for run in runs])
                         for n in sizes],
            "over_empty": over_empty("median_us"),
            "mean_over_empty": over_empty("mean_us"),
            "vm_steps_over_empty": over_empty("vm_steps"),
            "runs": [[run[n] for n in sizes] for run in runs]}


def measure_all(args, runtimes: dict[str, dict], tmp: Path, say) -> dict:
    sizes = tuple(args.sizes)
    costs = {name: {kind: [] for kind in ("live", "blocked")} for name in runtimes}
    rates = {name: [] for name in runtimes}
    shuffle = random.Random(args.seed)
    for repeat in range(args.repeats):
        order = [(kind, n) for kind in ("live", "blocked") for n in sizes]
        shuffle.shuffle(order)
        found = {name: {"live": {}, "blocked": {}} for name in runtimes}
        for kind, n in order:
            for name, env in runtimes.items():  # the runtimes side by side
                db = tmp / f"{name}-{kind}-{n}-{repeat}.db"
                found[name][kind][n] = child([("--point", kind), ("--size", str(n)),
                                              ("--claims", str(args.claims)),
                                              ("--db", str(db))], env)
                db.unlink()
        for name in runtimes:
            for kind in ("live", "blocked"):
                costs[name][kind].append(found[name][kind])
            rates[name].append(throughput("ours", args.items, tmp, runtimes[name]))
        say(f"[{repeat + 1}/{args.repeats}] " + ", ".join(
            f"{name}: empty {found[name]['live'][0]['median_us']} us,"
            f" live {sizes[-1]} {found[name]['live'][sizes[-1]]['median_us']} us,"
            f" blocked {sizes[-1]} {found[name]['blocked'][sizes[-1]]['median_us']}"
            f" us, {rates[name][-1]['per_second']}/s" for name in runtimes))
    current = runtimes["current"]
    return {
        "sizes": list(sizes),
        "live_claims": {name: series(costs[name]["live"], sizes) for name in runtimes},
        "blocked_backlog": {name: series(costs[name]["blocked"], sizes)
                            for name in runtimes},
        "throughput": {name: {
            "claims_per_s": median_of([r["per_second"] for r in rates[name]]),
            "double_claims": sum(r["double_claims"] for r in rates[name]),
            "runs": rates[name]} for name in runtimes},
        "raw_sql_claims_per_s": median_of([
            throughput("raw", args.items, tmp, current)["per_second"]
            for _ in range(args.repeats)]),
        "one_process_claims_per_s": {name: median_of([
            throughput("ours", args.items, tmp, env, processes=1)["per_second"]
            for _ in range(args.repeats)]) for name, env in runtimes.items()},
        "fence": [child([("--fence", str(tmp))], current) for _ in range(args.repeats)],
    }


def summarize(data: dict) -> dict:
    sizes, now = data["sizes"], "current"
    at = sizes.index(8000) if 8000 in sizes else len(sizes) - 1
    live = data["live_claims"][now]["over_empty"][at]
    blocked = data["blocked_backlog"][now]["over_empty"][at]
    rate = data["throughput"][now]["claims_per_s"]
    doubles = data["throughput"][now]["double_claims"]
    return {
        "at_size": sizes[at], "live_over_empty": live, "blocked_over_empty": blocked,
        "mean_live_over_empty": data["live_claims"][now]["mean_over_empty"][at],
        "mean_blocked_over_empty": data["blocked_backlog"][now]["mean_over_empty"][at],
        "claims_per_s_4_processes": rate, "double_claims": doubles,
        **({"baseline": {
            "live_over_empty": data["live_claims"]["baseline"]["over_empty"][at],
            "blocked_over_empty": data["blocked_backlog"]["baseline"]["over_empty"][at],
            "claims_per_s_4_processes": data["throughput"]["baseline"]["claims_per_s"],
        }} if "baseline" in data["throughput"] else {}),
        "targets_met": {
            "live_within_1.25x": live <= TARGETS["cost_8000_over_empty"],
            "blocked_within_1.25x": blocked <= TARGETS["cost_8000_over_empty"],
            "at_least_5000_per_s": rate >= TARGETS["claims_per_s_4_processes"],
            "no_double_claims": doubles == 0},
    }


def machine(load_at_start: list[float]) -> dict:
    """Versions, cores, and the load other processes put on them (1, 5, 15 min)."""
    from crashcourse.lab.evidence import versions
    return versions() | {"cpus": os.cpu_count(), "load_average_at_start": load_at_start,
                         "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}


def main() -> int:
    try:
        from crashcourse.validate import argument_parser
    except ImportError:  # a child on the baseline runtime: its options come from us
        argument_parser = argparse.ArgumentParser
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--claims", type=int, default=200,
                        help="timed claims per point (default 200)")
    parser.add_argument("--items", type=int, default=4000,
                        help="turns drained by the 4 processes (default 4000)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--seed", type=int, default=5, help="order of the points")
    parser.add_argument("--baseline-rev", default=BASELINE_REV,
                        help="git revision to compare with; '' for none")
    parser.add_argument("--output", type=Path, default=RESULTS)
    for hidden in ("--point", "--size", "--db", "--worker", "--owner", "--prepare",
                   "--fence"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        print(json.dumps(point(args.point, int(args.size), args.claims, args.db)))
        return 0
    if args.prepare:
        prepare(Path(args.db), int(args.prepare))
        return 0
    if args.worker:
        worker(args.worker, args.db, args.owner)
        return 0
    if args.fence:
        print(json.dumps(fence_cost(2000, Path(args.fence))))
        return 0
    if 0 not in args.sizes:
        parser.error("--sizes must include 0, the empty queue every ratio uses")
    from crashcourse.lab.evidence import manifest, new_run_path, write_exclusive

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    started, load = time.time(), [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="bench-claims-") as tmp:
        runtimes = {"current": runtime_env(ROOT / "src")}
        baseline = args.baseline_rev and extract(args.baseline_rev, Path(tmp))
        if baseline:
            runtimes["baseline"] = runtime_env(baseline)
        data = measure_all(args, runtimes, Path(tmp), say)
    record = {
        "schema": "crashcourse/claims_scaling/1",
        "measured_on": time.strftime("%Y-%m-%d", time.gmtime(started)),
        "machine": machine(load),
        "how": __doc__.split("\n\n", 1)[1].rsplit("\n\n", 2)[0],
        "runtimes": {"current": "this working tree (src/)",
                     **({"baseline": f"git {args.baseline_rev}: the claim query"
                         " walked every open row"} if baseline else {})},
        "settings": {"repeats": args.repeats, "claims_per_point": args.claims,
                     "items": args.items, "processes": PROCESSES, "seed": args.seed},
        "targets": TARGETS,
        "summary": summarize(data),
        **data,
        "seconds": round(time.time() - started, 1),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=2) + "\n")
    full = write_exclusive(new_run_path(ROOT / "artifacts" / "bench", "bench_claims"),
                           record | {"manifest": manifest(__file__)})
    print(json.dumps(record["summary"], indent=2))
    say(f"written to {args.output} and {full.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
