"""Chapter 10: claims per second on PostgreSQL, ours next to a bare SKIP LOCKED
loop, in one run on one server (make bench).

* OURS is ``claims.claim`` on a ``postgresql://`` store, the real code path:
  the store's lock SHARED, the pause flag and epoch, the database's clock, the
  probe for lapsed leases, the pick with the session rule, the session's
  try-lock, the grant that reads the rule again, the claims row, all in one
  round trip (the ``claim_next`` function the store installs).
* BARE is the yardstick: take the oldest queued turn ``FOR UPDATE SKIP
  LOCKED``, mark it held and write its claims row, nothing else (no session
  rule, no pause flag, no lease check). Three round trips: BEGIN with the
  pick, the grant, COMMIT.
* Both drain ``--items`` queued turns (each its own session, so the session
  rule never passes one) with ``--workers`` processes, on a fresh schema of
  the SAME server with the SAME table and indexes (``claims.install``), and
  HOLD what they claim (600 s leases; nothing is finished). Each worker
  connects and imports first, then waits for the same start signal; the rate
  comes from the durable claim timestamps (the server's clock), first to
  last. Double claims are counted from the rows: a turn with more than one
  claims row, or a generation above 1.
* ``--repeats`` rounds, ours and bare in alternating order; the figures are
  medians over the rounds, and the ratio is the median of each round's
  ours/bare.

Writes bench/results/pg_claims.json (committed) and the full record to
artifacts/bench/. Nothing here is asserted by the test suite.

    python bench/bench_pg_claims.py [--repeats R] [--items N] [--workers W]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from crashcourse import claims, store
from crashcourse.claims import READY, RUNNING
from crashcourse.store import postgres_server
from crashcourse.validate import argument_parser

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "pg_claims.json"
TARGETS = {"ours_over_bare": 0.9, "double_claims": 0}  # issue 24
TTL = 600.0  # nothing expires during a run: a second claim would be a double
BARE_PICK = f"""
SELECT id FROM work
WHERE status = '{READY}' AND role = 'shop'
ORDER BY control DESC, created, seq  -- claim order, down work_queued_in_order
LIMIT 1
FOR UPDATE SKIP LOCKED"""
BARE_GRANT = f"""
WITH granted AS (
    UPDATE work SET status = '{RUNNING}', owner = :owner,
        generation = generation + 1,
        expires = extract(epoch FROM clock_timestamp()) + :ttl
    WHERE id = :id
    RETURNING id, generation, expires)
INSERT INTO claims (work_id, generation, owner, claimed_at, expires)
SELECT id, generation, :owner, expires - :ttl, expires FROM granted"""


# The yardstick in ONE round trip (bench_pg_queues.py's ``bare_one_trip``):
# the same pick, grant and claims row in one autocommitted statement, the
# floor for a claim of one round trip that keeps no rule at all.
BARE_ONE_TRIP = f"""
WITH picked AS ({BARE_PICK}),
granted AS (
    UPDATE work SET status = '{RUNNING}', owner = :owner,
        generation = work.generation + 1,
        expires = extract(epoch FROM clock_timestamp()) + :ttl
    FROM picked
    WHERE work.id = picked.id
    RETURNING work.id, work.generation, work.expires)
INSERT INTO claims (work_id, generation, owner, claimed_at, expires)
SELECT id, generation, :owner, expires - :ttl, expires FROM granted
RETURNING work_id"""


def bare_claim(conn, owner: str) -> bool:
    """The yardstick's claim: whether it took a turn."""
    row = conn.execute(f"BEGIN;{BARE_PICK}").fetchone()
    if row is None:
        conn.execute("ROLLBACK")
        return False
    conn.execute(BARE_GRANT, {"id": row["id"], "owner": owner, "ttl": TTL})
    conn.execute("COMMIT")
    return True


def bare_one_trip_claim(conn, owner: str) -> bool:
    """The yardstick in one round trip: whether it took a turn."""
    return conn.execute(BARE_ONE_TRIP, {"owner": owner, "ttl": TTL}
                        ).fetchone() is not None

def ours_claim(conn, owner: str) -> bool:
    return claims.claim(conn, owner, ttl=TTL) is not None


def worker(kind: str, address: str, owner: str) -> None:
    """Connect, say ready, wait for the start line, drain, print how many."""
    take = bare_claim if kind == "bare" else ours_claim
    with store.opened(address, require=("work", "claims")) as conn:
        print("ready", flush=True)
        sys.stdin.readline()  # the start signal: every worker at once
        taken = 0
        while take(conn, owner):
            taken += 1
    print(taken, flush=True)


def prepare(server_url: str, items: int) -> str:
    """A fresh schema with the claims tables and ``items`` queued turns."""
    from crashcourse.store import postgres as pgstore

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    pgstore.create_schema(server_url, schema)
    address = f"{server_url}{'&' if '?' in server_url else '?'}schema={schema}"
    with store.opened(address) as conn:
        claims.install(conn)
        rows = [{"id": f"w{i:06d}", "i": float(i)} for i in range(items)]
        with store.immediate(conn):
            conn.raw.cursor().executemany(
                "INSERT INTO work (id, origin, session, prompt, subject, role, created)"
                " VALUES (%(id)s, %(id)s, %(id)s, 'restock', '', 'shop', %(i)s)", rows)
        conn.execute("ANALYZE work")
    return address


def drain(kind: str, address: str, workers: int) -> dict:
    argv = [sys.executable, __file__, "--worker", kind, "--url", address]
    procs = [subprocess.Popen([*argv, "--owner", f"{kind}{n}"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
             for n in range(workers)]
    try:
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit(f"a {kind} worker did not start")
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        taken = [int(proc.communicate(timeout=600)[0]) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if any(proc.returncode for proc in procs):
        raise SystemExit(f"a {kind} worker failed")
    with store.opened(address) as conn:
        first, last, rows = conn.execute(
            "SELECT min(claimed_at), max(claimed_at), count(*) FROM claims").fetchone()
        doubles = conn.execute(
            "SELECT (SELECT count(*) - count(DISTINCT work_id) FROM claims)"
            " + (SELECT count(*) FROM work WHERE generation > 1)").fetchone()[0]
        held = conn.execute(f"SELECT count(*) FROM work WHERE status = '{RUNNING}'"
                            ).fetchone()[0]
    return {"claims": rows, "held": held, "per_worker": taken,
            "per_second": round(rows / (last - first), 1), "double_claims": doubles}


def drop(server_url: str, address: str) -> None:
    from crashcourse.store import postgres as pgstore

    schema = address.rsplit("schema=", 1)[1]
    with pgstore.connect(server_url).raw as raw:
        raw.execute(f'DROP SCHEMA "{schema}" CASCADE')


def measure(server_url: str, args, say) -> dict:
    runs = {"ours": [], "bare": []}
    for repeat in range(args.repeats):
        order = ("ours", "bare") if repeat % 2 == 0 else ("bare", "ours")
        for kind in order:
            address = prepare(server_url, args.items)
            try:
                runs[kind].append(drain(kind, address, args.workers))
            finally:
                drop(server_url, address)
        say(f"[{repeat + 1}/{args.repeats}] ours {runs['ours'][-1]['per_second']}/s,"
            f" bare {runs['bare'][-1]['per_second']}/s")
    ratios = [ours["per_second"] / bare["per_second"]
              for ours, bare in zip(runs["ours"], runs["bare"], strict=True)]
    return {
        "ours_claims_per_s": round(statistics.median(
            r["per_second"] for r in runs["ours"]), 1),
        "bare_claims_per_s": round(statistics.median(
            r["per_second"] for r in runs["bare"]), 1),
        "ours_over_bare": round(statistics.median(ratios), 2),
        "ratios": [round(r, 3) for r in ratios],
        "double_claims": {kind: sum(r["double_claims"] for r in runs[kind])
                          for kind in runs},
        "all_claimed": all(r["claims"] == r["held"] == args.items
                           for kind in runs for r in runs[kind]),
        "runs": runs,
    }


def machine(server, load_at_start: list[float]) -> dict:
    """Versions (Python, PostgreSQL, psycopg), cores, and the load other
    processes put on them (1, 5, 15 min)."""
    import psycopg

    from crashcourse.lab.evidence import versions
    with store.opened(server.url) as conn:
        server_version = conn.execute("SHOW server_version").fetchone()[0]
    return versions() | {
        "postgresql": server_version, "psycopg": psycopg.__version__,
        "libpq": f"{psycopg.pq.version() // 10000}.{psycopg.pq.version() % 10000}",
        "server": "throwaway (crashcourse.store.postgres_server)"
        if server.pid else "the reader's own (CRASHCOURSE_PG_URL)",
        "cpus": os.cpu_count(), "load_average_at_start": load_at_start,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}


def main() -> int:
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--output", type=Path, default=RESULTS)
    for hidden in ("--worker", "--url", "--owner"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.url, args.owner)
        return 0
    from crashcourse.lab.evidence import manifest, new_run_path, write_exclusive

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    from importlib.util import find_spec

    if find_spec("psycopg") is None or (postgres_server.own_server() is None
                                        and postgres_server.binaries() is None):
        say("skipped: no PostgreSQL here (pip install pgserver psycopg,"
            f" or set {postgres_server.URL_ENV})")
        return 0
    started, load = time.time(), [round(x, 2) for x in os.getloadavg()]
    with postgres_server.running() as server:
        data = measure(server.url, args, say)
        host = machine(server, load)
    summary = {key: data[key] for key in ("ours_claims_per_s", "bare_claims_per_s",
                                          "ours_over_bare", "double_claims")}
    aim = TARGETS["ours_over_bare"]
    summary["targets_met"] = {
        f"at_least_{aim}x_bare": data["ours_over_bare"] >= aim,
        "no_double_claims": sum(data["double_claims"].values()) == 0,
        "every_turn_claimed_once": data["all_claimed"]}
    record = {
        "schema": "crashcourse/pg_claims/1",
        "measured_on": time.strftime("%Y-%m-%d", time.gmtime(started)),
        "machine": host,
        "how": __doc__.split("\n\n", 1)[1].rsplit("\n\n", 2)[0],
        "settings": {"repeats": args.repeats, "items": args.items,
                     "workers": args.workers, "ttl": TTL},
        "targets": TARGETS,
        "summary": summary,
        **data,
        "seconds": round(time.time() - started, 1),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=2) + "\n")
    full = write_exclusive(
        new_run_path(ROOT / "artifacts" / "bench", "bench_pg_claims"),
        record | {"manifest": manifest(__file__)})
    print(json.dumps(summary, indent=2))
    say(f"written to {args.output} and {full.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
