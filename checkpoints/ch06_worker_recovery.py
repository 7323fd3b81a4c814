"""Chapter 06 checkpoint: replace a killed holder and refuse a live stale one.

    python checkpoints/ch06_worker_recovery.py --output PATH [--quick] [--evidence]

Four cases, each with a fresh agent database and a fresh supplier process:

killed_holder       a child claims with a short lease, stores an approved order
                    and waits; a competing claim is refused; SIGKILL (-9); after
                    the REAL lease expiry the replacement claims generation 2,
                    sends the stored operation with a model that fails if called,
                    and finishes. The supplier's own file holds one order.
live_stale_holder   the same, but the child stays alive; once the replacement has
                    finished, the child tries observe, finish and send with its
                    old claim: all three refused, no stale transcript row.
lost_ack            the supplier commits, the worker is killed before it records
                    the receipt; the replacement looks the operation up before it
                    touches any unrelated work.
fenced_at_supplier  the old holder's request is held in flight; the replacement's
                    generation-2 request is accepted; then the supplier refuses
                    the old one.

Every count in the evidence is read from the two databases. ``--evidence`` adds
the durable rows themselves. Exit 0 only when every case holds; an existing
``--output`` is refused (exit 2) before anything runs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from crashcourse import claims, orders
from crashcourse.evidence import attempt, record, refused_output
from crashcourse.harness import Harness
from crashcourse.services import start_supplier
from crashcourse.store import opened, table_rows
from crashcourse.workers.shop_worker import FLOUR, run_once

WORKER = ["-m", "crashcourse.workers.shop_worker"]
# lease, request wait, supplier hold (s). Short on purpose: expiry is REAL time.
TIMING = {"quick": (0.6, 0.3, 2.2), "full": (1.5, 0.8, 4.5)}
BOUND = 10.0  # every wait for a child or a row is bounded by this


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Case:
    """One case's files, processes and database reads."""

    def __init__(self, root: Path, harness: Harness, lease: float, wait: float):
        root.mkdir(parents=True)
        self.agent, self.harness = root / "agent.db", harness
        self.lease, self.wait = lease, wait
        with opened(self.agent) as conn:
            orders.install(conn)
            self.work = claims.enqueue(conn, "phone:restock-flour", "counter",
                                       "Restock flour: two sacks left")
        self.supplier = None

    def supplier_up(self, *flags: str) -> None:
        self.supplier = start_supplier(self.harness, self.agent.with_name("sup.db"),
                                       *flags)

    def child(self, mode: str, stop_at: str | None = None):
        return self.harness.start(
            [*WORKER, mode, "--db", str(self.agent), "--work", self.work,
             "--ttl", str(self.lease), "--wait", str(self.wait),
             "--url", self.supplier.url], stop_at=stop_at)

    def competing_claim(self):
        with opened(self.agent) as conn:
            return claims.claim(conn, "competitor", ttl=self.lease)

    def wait_for_expiry(self) -> None:
        """Sleep until the durable lease of the current holding has passed."""
        with opened(self.agent) as conn:
            expires = claims.work_row(conn, self.work)["expires"]
        time.sleep(max(0.0, expires - time.time()) + 0.05)

    def replace(self, model=None) -> dict | None:
        with opened(self.agent) as conn:
            return run_once(conn, "replacement", self.supplier.url,
                            model or orders.NoNewReasoning(), ttl=5.0, wait_s=2.0)

    def agent_rows(self) -> dict:
        with opened(self.agent) as conn:
            return {t: table_rows(conn, t) for t in
                    ("work", "holdings", "refusals", "transcript", "orders")}

    def supplier_rows(self) -> dict:
        with opened(self.supplier.db) as conn:
            return {t: table_rows(conn, t) for t in ("orders", "requests")}


def facts(case: Case, op_id: str) -> dict:
    """The counts every case reports, read from both databases."""
    agent, remote = case.agent_rows(), case.supplier_rows()
    work = next(w for w in agent["work"] if w["id"] == case.work)
    holdings = [h for h in agent["holdings"] if h["work_id"] == case.work]
    return {
        "work_status": work["status"],
        "generations": [h["generation"] for h in holdings],
        "replacement_claimed_after_expiry": len(holdings) >= 2
        and holdings[1]["claimed_at"] >= holdings[0]["expires"],
        "proposals_after_generation_1": sum(
            1 for t in agent["transcript"]
            if t["generation"] > 1 and '"proposal"' in t["message"]),
        "stale_transcript_rows": sum(
            1 for t in agent["transcript"]
            if t["generation"] == 1 and '"late"' in t["message"]),
        "refused_actions_gen1": sorted(
            r["action"] for r in agent["refusals"] if r["generation"] == 1),
        "supplier_orders": len(remote["orders"]),
        "supplier_orders_for_op": sum(
            1 for o in remote["orders"] if o["op_id"] == op_id),
        "supplier_posts": [(r["generation"], r["answer"]) for r in remote["requests"]
                           if r["method"] == "POST"],
        "agent_order_status": next(o["status"] for o in agent["orders"]),
    }, {"agent": agent, "supplier": remote}


def op_of(case: Case) -> str:
    with opened(case.agent) as conn:
        return orders.order_for(conn, case.work)["op_id"]


def killed_holder(case: Case) -> dict:
    case.supplier_up()
    child = case.child("hold", stop_at="holding")
    child.wait_for_boundary(BOUND)
    competing = case.competing_claim()
    killed = child.kill()
    killed_at = time.time()
    case.wait_for_expiry()
    case.replace()
    found, rows = facts(case, op_of(case))
    found |= {"child_exit": killed.returncode, "competing_claim": competing,
              "killed_at_unix": killed_at}
    found["holds"] = (killed.returncode == -9 and competing is None
                      and common_holds(found))
    return found, rows


def live_stale_holder(case: Case) -> dict:
    case.supplier_up()
    child = case.child("hold", stop_at="holding")
    child.wait_for_boundary(BOUND)
    competing = case.competing_claim()
    case.wait_for_expiry()
    case.replace()
    alive_during_replacement = child.alive()
    child.release()
    finished = child.finish(BOUND)
    found, rows = facts(case, op_of(case))
    found |= {"child_exit": finished.returncode, "competing_claim": competing,
              "child_alive_during_replacement": alive_during_replacement}
    found["holds"] = (competing is None and alive_during_replacement
                      and finished.returncode == 0 and common_holds(found)
                      and found["refused_actions_gen1"] == ["finish", "observe", "send"]
                      and found["stale_transcript_rows"] == 0)
    return found, rows


def lost_ack(case: Case) -> dict:
    case.supplier_up()
    with opened(case.agent) as conn:
        other = claims.enqueue(conn, "mail:price-list", "back-office",
                               "Restock sugar from the new price list")
    child = case.child("send", stop_at="before_receipt")
    child.wait_for_boundary(BOUND)
    killed = child.kill()
    status_at_kill = case.agent_rows()["orders"][0]["status"]
    case.wait_for_expiry()
    first = case.replace()
    second = case.replace(orders.ScriptedModel(FLOUR))
    found, rows = facts(case, op_of(case))
    order_of_work = [h["work_id"] for h in rows["agent"]["holdings"][1:]]
    looked_up = [r["method"] for r in rows["supplier"]["requests"]]
    found |= {"child_exit": killed.returncode, "agent_order_at_kill": status_at_kill,
              "claims_after_kill": ["restock" if w == case.work else "unrelated"
                                    for w in order_of_work],
              "supplier_requests": looked_up}
    found["holds"] = (killed.returncode == -9 and status_at_kill == "SENDING"
                      and first["work"] == case.work and second["work"] == other
                      and looked_up == ["POST", "GET"] and common_holds(found))
    return found, rows


def fenced_at_supplier(case: Case, hold: float) -> dict:
    case.supplier_up("--hold-first", str(hold))
    child = case.child("send")
    finished = child.finish(BOUND)  # its wait ran out: it recorded UNKNOWN
    status_after_child = case.agent_rows()["orders"][0]["status"]
    case.wait_for_expiry()
    case.replace()
    deadline = time.monotonic() + hold + BOUND
    while len(case.supplier_rows()["requests"]) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # the held request is still asleep inside the supplier
    found, rows = facts(case, op_of(case))
    found |= {"child_exit": finished.returncode,
              "agent_order_after_child": status_after_child,
              "accepted_generation": [
                  o["generation"] for o in rows["supplier"]["orders"]]}
    found["holds"] = (status_after_child == "UNKNOWN" and common_holds(found)
                      and found["supplier_posts"] == [(2, 201), (1, 412)]
                      and found["accepted_generation"] == [2])
    return found, rows


def common_holds(found: dict) -> bool:
    """What every case needs: one order at the supplier, generation 2 finished it
    after real expiry, and no new proposal from a model."""
    return (found["work_status"] == "DONE" and found["generations"][:2] == [1, 2]
            and found["replacement_claimed_after_expiry"]
            and found["proposals_after_generation_1"] == 0
            and found["supplier_orders"] == 1 and found["supplier_orders_for_op"] == 1
            and found["agent_order_status"] == "CONFIRMED")


def facts_and_rows(run, case: Case) -> dict:
    found, rows = run(case)
    return {**found, "rows": rows}


def run_cases(root: Path, mode: str, keep_rows: bool) -> list[dict]:
    lease, wait, hold = TIMING[mode]
    cases = {"killed_holder": killed_holder, "live_stale_holder": live_stale_holder,
             "lost_ack": lost_ack,
             "fenced_at_supplier": lambda c: fenced_at_supplier(c, hold)}
    trials = []
    for name, run in cases.items():
        started = time.monotonic()
        with Harness() as harness:
            case = Case(root / name, harness, lease, wait)
            found = attempt({}, facts_and_rows, run, case)
        rows = found.pop("rows", None)
        trial = {"case": name, "lease_s": lease, **found,
                 "elapsed_s": round(time.monotonic() - started, 3)}
        if keep_rows and rows is not None:
            trial["rows"] = rows
        why = f" ({found['error']})" if "error" in found else ""
        say(f"{name}: {'holds' if found['holds'] else 'FAILED'}{why}")
        trials.append(trial)
    return trials


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if refused_output(args.output):
        return 2
    mode = "quick" if args.quick else "full"
    with tempfile.TemporaryDirectory(prefix="ch06-") as tmp:
        trials = run_cases(Path(tmp), mode, args.evidence)
    summary = {"mode": mode, "cases": len(trials),
               "held": sum(1 for t in trials if t["holds"])}
    record(args.output, "crashcourse/ch06_worker_recovery/1", __file__, summary,
           trials, argv=sys.argv)
    say(f"{summary['held']}/{summary['cases']} cases held -> {args.output}")
    return 0 if summary["held"] == summary["cases"] else 1


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="new JSON evidence file")
    parser.add_argument("--quick", action="store_true", help="shorter leases")
    parser.add_argument("--evidence", action="store_true",
                        help="include the durable rows in each trial")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
