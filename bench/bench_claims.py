"""Chapter 05-06 costs, measured side by side in one run (make bench).

* claims per second with 4 processes: ``claims.claim`` (the book's query, its
  row in the claims table, the session rule) next to a raw-SQL claim loop (one
  ``UPDATE ... WHERE id = (SELECT ... LIMIT 1)`` plus a log row) on the same
  number of items; the rate comes from the durable claim timestamps
  (first to last), so process start-up is not counted;
* the same two loops in one process, for context (no lock waits);
* double claims for both: items claimed more than once (nothing expires);
* the fence per write: ``fence.observe`` next to the same INSERT in a bare
  ``BEGIN IMMEDIATE`` transaction, one process.

Results go to artifacts/bench/ as JSON with machine, Python and SQLite
versions. Nothing here is asserted by the test suite.

    python bench/bench_claims.py [--items N] [--repeats R]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crashcourse import claims, fence
from crashcourse.evidence import manifest, new_run_path, write_exclusive
from crashcourse.store import connect, immediate

ROOT = Path(__file__).resolve().parent.parent
PROCESSES = 4
RAW_CLAIM = """
UPDATE work SET status = 'RUNNING', owner = :owner, generation = generation + 1,
    expires = :expires
WHERE id = (SELECT id FROM work WHERE status = 'READY' ORDER BY created LIMIT 1)
RETURNING id, generation
"""


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


def measure(kind: str, items: int, directory: Path, processes: int = PROCESSES) -> dict:
    db = directory / f"{kind}-{time.monotonic_ns()}.db"
    prepare(db, items)
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", kind,
                               "--db", str(db), "--owner", f"{kind}{n}"])
             for n in range(processes)]
    for proc in procs:
        proc.wait(timeout=600)
    conn = connect(db)
    table, column = ("raw_log", "at") if kind == "raw" else ("claims", "claimed_at")
    first, last, claimed = conn.execute(
        f"SELECT min({column}), max({column}), count(*) FROM {table}").fetchone()
    doubles = conn.execute("SELECT count(*) FROM work WHERE generation > 1").fetchone()
    conn.close()
    return {"claims": claimed, "per_second": round(claimed / (last - first), 1),
            "double_claims": doubles[0]}


def fence_cost(writes: int, directory: Path) -> dict:
    conn = connect(directory / "fence.db")
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


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", choices=("raw", "ours"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--owner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.db, args.owner)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-claims-") as tmp:
        runs = {kind: [measure(kind, args.items, Path(tmp))
                       for _ in range(args.repeats)] for kind in ("raw", "ours")}
        # context: the same loops in ONE process, where nobody waits on a lock
        alone = {kind: measure(kind, args.items, Path(tmp), processes=1)
                 for kind in ("raw", "ours")}
        writes = [fence_cost(2000, Path(tmp) / str(i)) for i in range(args.repeats)
                  if (Path(tmp) / str(i)).mkdir() is None]
    summary = {
        "processes": PROCESSES, "items": args.items, "repeats": args.repeats,
        "raw_claims_per_s": median_of(runs["raw"], "per_second"),
        "ours_claims_per_s": median_of(runs["ours"], "per_second"),
        "double_claims": {kind: sum(r["double_claims"] for r in kind_runs)
                          for kind, kind_runs in runs.items()},
        "one_process_claims_per_s": {k: v["per_second"] for k, v in alone.items()},
        "fence_cost_us_per_write": median_of(writes, "fence_cost_us"),
        "fenced_over_bare_write": median_of(writes, "ratio"),
    }
    summary["ours_over_raw"] = round(
        summary["ours_claims_per_s"] / summary["raw_claims_per_s"], 2)
    path = write_exclusive(new_run_path(ROOT / "artifacts" / "bench", "bench_claims"), {
        "schema": "crashcourse/bench_claims/1", "manifest": manifest(__file__),
        "summary": summary, "runs": runs, "fence_writes": writes})
    print(summary)
    print(f"written to {path.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
