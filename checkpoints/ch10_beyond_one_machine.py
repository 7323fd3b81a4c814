"""Chapter 10 checkpoint: the same claims and fences on PostgreSQL, with
workers on two hosts.

    python checkpoints/ch10_beyond_one_machine.py --output PATH [--quick]
        [--trials N] [--case NAME] [--hosts auto|netns|frozen]
        [--no-fence | --read-first]

A throwaway PostgreSQL server (or the reader's own, named by
CRASHCOURSE_PG_URL), a supplier process, and two hosts, a and b: Linux
network namespaces joined to this machine by veth pairs where they can be
made (root), else the FROZEN fallback, where a host that is cut off is
paused with SIGSTOP instead. The manifest names which of the two ran, the
backend and the server's version. Every trial has a store of its own (a
schema on the server) and a supplier process of its own. The cases:

- ``partitioned_holder``: a worker on host a claims the restock work (a 1 s
  lease), lets its order out while it is current (SENDING), and its link is
  cut before the order leaves. The lease runs out by the SERVER's clock; a
  worker on host b claims generation 2, looks the order up, sends it and
  finishes. Then the link returns: a's order arrives and the supplier refuses
  it (412), and a's transcript line and finish are refused by the database's
  fence. ``stale_writes_refused`` counts those refusals from rows (the
  supplier's ``requests``, the store's ``refusals``), ``stale_writes_landed``
  the late writes that got in anyway (0).
- ``dead_host``: two workers on host a each send an order and are held
  before they record the answer, one of them inside a fenced write (its
  work row locked); then host a DIES: its link is cut, then every process on
  it is SIGKILLed, so nothing tells the server (a machine that lost power).
  Two workers on host b finish all the work, a's by lookup once its leases
  have run out: ``sent_twice`` (orders sent again) must be 0. Read from the
  server's ``pg_stat_activity``: both dead connections are still there after
  the kill; the locked piece is claimed again only after the server's
  idle-in-transaction timeout ended the dead transaction, not when its lease
  ran out; the idle connection is still there when the work is all done.
  (With FROZEN hosts a kill is always heard: the case runs as the next.)
- ``killed_processes``: the same, but host a's processes are killed with its
  link up: its kernel closes their connections, and the server ends both at
  once (bounded wait). What a kill alone shows is a crashed program, not a
  dead machine.
- ``claims_race``: eight workers, four on each host, released at once, each
  claim a first turn (the parent waits until all eight hold one, so a loaded
  machine's scheduler cannot leave a racer out), then released again to
  drain one queue of turns in many sessions; ``hosts``, ``workers`` and
  ``double_claims`` (a turn claimed twice, or two live holders in one
  session) are counted from the rows.

``--quick`` runs each case once, ``--trials N`` each case N times, ``--case
NAME`` that case alone (repeat it for more); ``--hosts frozen`` runs the
fallback even where namespaces work. ``--no-fence`` is the mutant: a's late
writes skip the fence and the supplier ignores generations; only
``partitioned_holder`` runs, and it must FAIL: its late writes land.
``--read-first`` is the race's mutant: each racer picks its turn by a plain
read before it takes any lock; only ``claims_race`` runs, and it must FAIL:
turns are claimed twice, counted from the rows. Exit 0
only when every trial holds, else 1; exit 2 for bad usage or an ``--output``
that exists or cannot be written (refused before anything runs).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from crashcourse import claims
from crashcourse.lab import experiment, hosts
from crashcourse.lab.harness import Harness
from crashcourse.lab.two_hosts import (
    HOLDER,
    TAKER,
    Shop,
    ended,
    go,
    partition,
    said,
    wait_past,
    world,
)
from crashcourse.store import opened, postgres_server
from crashcourse.store import postgres as pgstore
from crashcourse.waiting import wait_until
from crashcourse.workers.host_worker import LATE

EVIDENCE_ID = "crashcourse.ch10.beyond_one_machine/1"
RACERS_PER_HOST = 4


def partitioned_holder(world, name: str, quick: bool, fenced: bool = True) -> dict:
    shop = Shop(world, name, *(() if fenced else ("--no-fence",)))
    scene = partition(shop, fenced)
    found = shop.rows()
    instants = {key: scene.pop(key) for key in ("cut_at", "restoring_at",
                                                "expired_seen")}
    return judge_partition(found, scene, instants) | {
        "fenced": fenced, **scene, "instants": instants, "rows": found}


def stale_counts(found: dict) -> dict:
    """The late writes of generation 1, refused and landed, from rows only."""
    posts = [r for r in found["supplier"]["requests"] if r["method"] == "POST"]
    accepted = [r for r in posts if r["answer"] in (200, 201)]
    newest = max((r["generation"] for r in accepted), default=0)
    work = found["store"]["work"][0]
    late_lines = [t for t in found["store"]["transcript"]
                  if t["generation"] == 1 and f'"{LATE["kind"]}"' in t["message"]]
    refused = {"at_supplier": [r for r in posts if r["answer"] == 412],
               "by_database": [r for r in found["store"]["refusals"]
                               if r["generation"] == 1]}
    landed = {"at_supplier": [r for r in accepted if r["generation"] < newest],
              "transcript": late_lines,
              "outcome": [work] if (work["outcome"] or "").startswith("a-") else []}
    return {"refused": refused, "landed": landed}


def judge_partition(found: dict, scene: dict, instants: dict) -> dict:
    stale = stale_counts(found)
    # the supplier's clock and ours are this machine's: one clock
    arrived = [r["at"] for r in found["supplier"]["requests"]
               if r["method"] == "POST" and r["generation"] == 1]
    claim_rows = found["store"]["claims"]
    first, second = (claim_rows + [None, None])[:2]
    posts = [(r["generation"], r["answer"]) for r in found["supplier"]["requests"]
             if r["method"] == "POST"]
    refused = sum(len(rows) for rows in stale["refused"].values())
    landed = sum(len(rows) for rows in stale["landed"].values())
    checks = {
        "holder_on_a_claimed_generation_1": first is not None
        and (first["owner"], first["generation"]) == ("a-holder", 1),
        "b_claimed_generation_2_after_the_lease_by_the_servers_clock":
            second is not None
            and (second["owner"], second["generation"]) == ("b-taker", 2)
            and second["claimed_at"] > first["expires"],
        "one_order_at_the_supplier_from_generation_2":
            [o["generation"] for o in found["supplier"]["orders"]] == [2],
        "late_order_arrived_after_the_link_returned": len(arrived) == 1
        and arrived[0] >= instants["restoring_at"],
        "late_order_refused_by_the_supplier": posts == [(2, 201), (1, 412)],
        "late_writes_refused_by_the_database": [
            (r["action"], r["reason"]) for r in stale["refused"]["by_database"]]
        == [("observe", "superseded"), ("finish", "superseded")],
        "no_stale_write_landed": landed == 0,
        "done_by_generation_2": (found["store"]["work"][0]["status"],
                                 found["store"]["work"][0]["outcome"])
        == (claims.DONE, "CONFIRMED"),
        "both_workers_exited_0":
            scene["holder"]["returncode"] == scene["taker"]["returncode"] == 0,
    }
    return {"checks": checks, "holds": all(checks.values()),
            "stale_writes_refused": refused, "stale_writes_landed": landed,
            "supplier_posts": posts}


def activity(shop: Shop, backends: dict[str, int]) -> dict[str, dict | None]:
    """What the server says of each named connection now: its state and
    since when (the server's clock), or None once the server has ended it."""
    with opened(shop.address) as conn:
        rows = {r["pid"]: {"state": r["state"], "since": r["since"]}
                for r in conn.execute(
                    "SELECT pid, state,"
                    " extract(epoch FROM state_change)::float8 AS since"
                    " FROM pg_stat_activity WHERE datname = current_database()")}
    return {name: rows.get(pid) for name, pid in backends.items()}


def wait_gone(shop: Shop, backends: dict[str, int], timeout: float = 10.0) -> bool:
    """Whether the server ended every named connection within ``timeout``."""
    try:
        wait_until(lambda: not any(activity(shop, backends).values()), timeout,
                   interval=0.05, what="the server end the killed host's connections")
    except TimeoutError:
        return False  # a check of its own: the server did not hear at once
    return True


def end_backends(shop: Shop, backends: dict[str, int]) -> None:
    """End what the server still keeps of a dead host, as an operator would,
    so that nothing of one trial outlives it."""
    with opened(shop.address) as conn:
        for pid in backends.values():
            conn.execute("SELECT pg_terminate_backend(:pid)", {"pid": pid})


def host_death(world, name: str, quick: bool, silent: bool = True) -> dict:
    """Two workers on host a, one held after its order was answered (no
    transaction open), one inside a fenced write (the work row locked); then
    host a dies: ``silent``, the link is cut before the kill (a machine that
    lost power), else its processes are killed and its kernel tells the
    server at once. Two workers on host b finish everything."""
    shop, (a, b) = Shop(world, name), world.hosts.values()
    pieces = 4 if quick else 8
    with opened(shop.address) as conn:
        ids = [claims.enqueue(conn, f"phone:restock-{i}", f"counter-{i}",
                              f"Restock shelf {i}") for i in range(pieces)]
    survivors = [shop.worker(b, "work", f"b-{n}", *TAKER, "--start-on-go")
                 for n in range(2)]
    # One after the other: an open fenced write holds the store's lock SHARED,
    # and a-0's sign-off (an exclusive writer) would wait behind it. Each holder
    # is told its piece: a-0's lease has run out before a-1 starts (we wait for
    # it, as a slow start-up on a loaded machine would), and a-1 told only to
    # work would recover a-0's piece first and never hold (issue 36).
    doomed = {"idle": shop.worker(a, "work", "a-0", *HOLDER, "--hold-after-send",
                                  "--work", ids[0])}
    sent = said(doomed["idle"], "sent")
    backends = {"idle": sent["backend"]}
    wait_past(shop, sent["expires"])
    doomed["in_transaction"] = shop.worker(a, "work", "a-1", *HOLDER,
                                           "--hold-mid-write", "--work", ids[1])
    backends["in_transaction"] = said(doomed["in_transaction"], "writing")["backend"]
    at_kill = shop.rows()
    silenced = silent and a.mode == hosts.NETNS  # FROZEN: a kill is always heard
    killed = hosts.die(a) if silenced else hosts.kill_host(a)
    seen_at_kill = activity(shop, backends)
    heard = None if silenced else wait_gone(shop, backends)
    for worker in survivors:
        said(worker, "ready")
        go(worker)
    reports = [ended(worker) for worker in survivors]
    found = shop.rows()
    seen_after = activity(shop, backends)
    end_backends(shop, backends)
    if silenced:
        hosts.restore(a)  # the next trial runs on host a again
    judged = judge_death(at_kill, found, pieces, seen_at_kill, seen_after, silenced,
                         heard)
    return judged | {
        "host_mode": a.mode, "silent": silenced, "processes_killed": killed,
        "backends": {"at_kill": seen_at_kill, "after_recovery": seen_after},
        "returncodes": {"a": [w.returncode for w in doomed.values()],
                        "b": [r["returncode"] for r in reports]},
        "rows": {"at_kill": at_kill, "final": found}}


def killed_processes(world, name: str, quick: bool) -> dict:
    return host_death(world, name, quick, silent=False)


def judge_death(at_kill: dict, found: dict, pieces: int, seen_at_kill: dict,
                seen_after: dict, silenced: bool, heard: bool | None) -> dict:
    in_flight = {o["work_id"] for o in at_kill["store"]["orders"]
                 if o["status"] == "SENDING"}
    requests = found["supplier"]["requests"]
    posts = [r for r in requests if r["method"] == "POST"]
    keys = [r["operation_key"] for r in posts]
    sent_twice = len(keys) - len(set(keys))
    recovered = [c for c in found["store"]["claims"]
                 if c["work_id"] in in_flight and c["generation"] == 2]
    looked_up = {r["operation_key"] for r in requests if r["method"] == "GET"}
    locked = seen_at_kill["in_transaction"]
    # the piece whose row the dead transaction held: its holder was a-1
    [locked_work] = [c["work_id"] for c in found["store"]["claims"]
                     if c["owner"] == "a-1"] or [None]
    retaken = [c["claimed_at"] for c in recovered if c["work_id"] == locked_work]
    timeout_s = pgstore.IDLE_IN_TRANSACTION_MS / 1000
    checks = {
        "a_was_mid_work": len(in_flight) == 2
        and len(at_kill["supplier"]["orders"]) == 2,
        "every_piece_done": [w["status"] for w in found["store"]["work"]]
        == [claims.DONE] * pieces,
        "one_order_per_piece": sorted(o["work_id"] for o in found["supplier"]["orders"])
        == sorted(w["id"] for w in found["store"]["work"]),
        "nothing_sent_twice": sent_twice == 0 and len(posts) == pieces,
        "a_work_recovered_on_b": sorted(c["work_id"] for c in recovered)
        == sorted(in_flight) and all(c["owner"].startswith("b-") for c in recovered),
        "recovered_by_lookup": all(o["operation_key"] in looked_up
                                   for o in at_kill["store"]["orders"]),
    }
    if silenced:  # the server was told nothing: what it kept, and for how long
        checks |= {
            "the_server_kept_both_connections_at_the_kill": locked is not None
            and locked["state"] == "idle in transaction"
            and (seen_at_kill["idle"] or {}).get("state") == "idle",
            "the_idle_connection_outlived_the_recovery": seen_after["idle"] is not None,
            "the_locked_work_was_retaken_only_after_the_servers_timeout":
                locked is not None and len(retaken) == 1
                and retaken[0] >= locked["since"] + timeout_s,
            "the_timeout_ended_the_dead_transaction": seen_after["in_transaction"]
            is None,
        }
    else:  # the kernel closed the sockets: the server heard at once
        checks["the_server_ended_both_connections_at_once"] = heard is True
    return {"checks": checks, "holds": all(checks.values()), "sent_twice": sent_twice,
            "pieces": pieces, "recovered": len(recovered),
            "locked_work": locked_work,
            "retaken_after_idle_s": round(retaken[0] - locked["since"], 2)
            if retaken and locked else None}


def claims_race(world, name: str, quick: bool, read_first: bool = False) -> dict:
    shop = Shop(world, name)
    turns, sessions = (160, 16) if quick else (600, 40)
    with opened(shop.address) as conn:
        for i in range(turns):
            claims.enqueue(conn, f"race:{i}", f"session-{i % sessions}", "Count stock")
    mutant = ("--read-first",) if read_first else ()
    racers = [shop.worker(host, "drain", f"{host.name}-{n}", "--ttl", "600", *mutant)
              for host in world.hosts.values() for n in range(RACERS_PER_HOST)]
    for racer in racers:
        said(racer, "ready")
    for racer in racers:  # released together: nobody finds the queue empty
        go(racer)
    for racer in racers:  # each holds its first turn: all eight in the race
        said(racer, "claimed")
    for racer in racers:
        go(racer)
    reports = [ended(racer) for racer in racers]
    found = shop.rows()
    return judge_race(found["store"], turns, len(racers)) | {
        "read_first": read_first, "host_mode": next(iter(world.hosts.values())).mode,
        "returncodes": [r["returncode"] for r in reports],
        "rows": {"store": {t: found["store"][t] for t in ("work", "claims")}}}


def double_claims(store_rows: dict) -> dict:
    """From rows: turns claimed more than once, and turns of one session whose
    claims overlap (one claimed before the other was finished)."""
    claim_rows = store_rows["claims"]
    twice = len(claim_rows) - len({c["work_id"] for c in claim_rows})
    work = {w["id"]: w for w in store_rows["work"]}
    spans: dict[str, list] = {}
    for c in claim_rows:
        end = work[c["work_id"]]["finished"] or c["expires"]
        spans.setdefault(work[c["work_id"]]["session"], []).append(
            (c["claimed_at"], end))
    overlapping = 0
    for held in spans.values():
        free_from = float("-inf")  # when the session's holders so far let go
        for start, end in sorted(held):
            overlapping += start < free_from
            free_from = max(free_from, end)
    return {"work": twice, "session": overlapping}


def judge_race(store_rows: dict, turns: int, started: int) -> dict:
    owners = [c["owner"] for c in store_rows["claims"]]
    per_host: dict[str, int] = {}
    for owner in owners:
        per_host[owner.split("-")[0]] = per_host.get(owner.split("-")[0], 0) + 1
    doubled = double_claims(store_rows)
    found = {"hosts": len(per_host), "workers": len(set(owners)),
             "double_claims": doubled["work"] + doubled["session"]}
    checks = {
        "every_turn_claimed_once_and_done": len(owners) == turns
        and all(w["status"] == claims.DONE for w in store_rows["work"]),
        "no_double_claims": found["double_claims"] == 0,
        "every_worker_claimed": found["workers"] == started,
        "both_hosts_claimed": found["hosts"] == 2,
    }
    return {"checks": checks, "holds": all(checks.values()), **found,
            "turns": turns, "claims_per_host": per_host,
            "claims_per_worker": {o: owners.count(o) for o in sorted(set(owners))},
            "double_claims_by_kind": doubled}


CASES = {"partitioned_holder": partitioned_holder, "dead_host": host_death,
         "killed_processes": killed_processes, "claims_race": claims_race}


def run_case(harness: Harness, folder: Path, made, case, name: str, number: int,
             quick: bool) -> dict:
    """One trial on the shared server and hosts, its supplier in its own
    harness; every process it left on a host is killed when it ends."""
    try:
        found = case(replace(made, harness=harness, folder=folder),
                     f"{name}_{number}", quick)
    finally:
        for host in made.hosts.values():
            hosts.kill_host(host)  # nothing of one trial lives into the next
    return {"case": name, "trial": number, **found}


def run(args) -> tuple[dict, list[dict], dict]:
    count = 1 if args.quick else args.trials
    cases = {name: CASES[name] for name in args.case or CASES}
    if args.no_fence:
        cases = {"partitioned_holder": lambda *a: partitioned_holder(*a, fenced=False)}
    if args.read_first:
        cases = {"claims_race": lambda *a: claims_race(*a, read_first=True)}
    isolate = {"auto": None, hosts.NETNS: True, hosts.FROZEN: False}[args.hosts]
    with (tempfile.TemporaryDirectory(prefix="ch10-") as folder,
          world(folder, isolate=isolate) as made):
        trials = experiment.run_trials(
            [experiment.Trial(f"{name} #{i}", {"case": name, "trial": i},
                              (made, case, name, i, args.quick))
             for i in range(1, count + 1) for name, case in cases.items()], run_case)
        setup = made.facts()
    summary = {"cases": len(trials), "held": sum(t["holds"] for t in trials),
               **setup, "fenced": not args.no_fence, "read_first": args.read_first}
    for field in ("stale_writes_refused", "stale_writes_landed", "sent_twice",
                  "double_claims"):
        summary[field] = sum(t.get(field, 0) for t in trials)
    return summary, trials, {"manifest": setup}


def host_mode(text: str) -> str:
    """``--hosts``: auto, netns or frozen; netns only where namespaces can be
    made and the server is one this machine starts (refused before any run)."""
    if text not in ("auto", hosts.NETNS, hosts.FROZEN):
        raise argparse.ArgumentTypeError(f"not auto, netns or frozen: {text!r}")
    if text == hosts.NETNS and (why := hosts.unavailable()) is not None:
        raise argparse.ArgumentTypeError(f"no network namespaces here: {why}")
    if text == hosts.NETNS and postgres_server.own_server() is not None:
        raise argparse.ArgumentTypeError(
            f"a namespace cannot reach the server {postgres_server.URL_ENV} names")
    return text


def command_line():
    parser = experiment.command_line(
        __doc__, quick_help="each case once, what the test suite runs",
        count="trials", default=3, count_help="trials of each case")
    mutants = parser.add_mutually_exclusive_group()
    mutants.add_argument("--no-fence", action="store_true",
                         help="the mutant: late writes skip the fence (default: off)")
    mutants.add_argument("--read-first", action="store_true",
                         help="the race's mutant: each racer picks its turn by a "
                         "plain read before any lock (default: off)")
    parser.add_argument("--case", action="append", choices=tuple(CASES),
                        help="run only this case (repeat for more; default: all)")
    parser.add_argument("--hosts", type=host_mode, default="auto",
                        metavar="auto|netns|frozen",
                        help="how the hosts are kept apart: network namespaces, or "
                        "processes paused by SIGSTOP; auto takes namespaces where "
                        "they work (default: %(default)s)")
    return parser


main = experiment.script(__file__, evidence_id=EVIDENCE_ID, run=run,
                         parser=command_line())

if __name__ == "__main__":
    sys.exit(main())
