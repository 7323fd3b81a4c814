"""Chapter 06 checkpoint: replace a killed holder and refuse a live stale one.

    python checkpoints/ch06_worker_recovery.py --output PATH [--quick] [--seed N]

Eight cases, each with a fresh agent database and a fresh supplier process:

killed_holder       a child claims with a short lease, stores a signed-off order
                    and waits; a competing claim is refused; SIGKILL (-9); after
                    the REAL lease expiry the replacement claims generation 2,
                    sends the stored operation with a model that fails if called,
                    and finishes. The supplier's own file holds one order.
live_stale_holder   the same, but the child stays alive; once the replacement has
                    finished, the child tries observe, finish and send with its
                    old claim: all three refused, no stale transcript row.
frozen_after_admit  the child admits its order (SENDING is recorded) and is
                    frozen (SIGSTOP) before its request leaves; the replacement
                    looks the order up, finds nothing, sends it under the SAME
                    key as generation 2 and finishes; thawed (SIGCONT), the child
                    sends its request: the supplier refuses generation 1 (412).
                    One order, from the supplier's rows.
lost_ack            the supplier commits, the worker is killed before it records
                    the receipt; the replacement looks the operation up before it
                    touches any unrelated work. The supplier's requests are split
                    at the kill: the child's POST before it, only a GET after.
crash_during_recovery  the child is killed after admitting its order; the
                    recovery is itself killed, three times: a ``run`` process
                    at ``after_sending_recorded`` (admitted, unsent), the next
                    at ``before_receipt`` (sent, receipt unrecorded), the next
                    at a random instant (``--seed``); a last one runs to the
                    end. One order at the supplier, sent once, by generation 3.
fenced_at_supplier  the old holder's request is held in flight; the replacement's
                    generation-2 request is accepted; then the supplier refuses
                    the old one.
cancelled_while_frozen  the child admits its order (SENDING) and is frozen
                    (SIGSTOP, seen stopped in /proc) before its POST leaves; the
                    operator cancels and settles (``orders.settle_cancelled``:
                    the supplier's fence first, then the lookup); thawed, the
                    child POSTs: refused (412), no order at the supplier, the
                    shop's order REVOKED on CANCELLED work.
cancelled_while_frozen_lookup_only  the negative control at the same barrier:
                    settled by lookup alone (no fence); the thawed POST is
                    placed (201): an order for cancelled work.

The two cancel cases are judged from the supplier's and the shop's rows,
never the child's exit or report. Every count in the evidence is read from
the two databases (the lease too:
``expires - claimed_at`` of the child's claim row), and each case carries the
durable rows it was judged from. Exit 0 only when every case holds, else 1;
exit 2 for bad arguments or an ``--output`` that exists or cannot be written
(refused before anything runs).
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import asdict
from pathlib import Path

from crashcourse import claims
from crashcourse.claims import fence, orders
from crashcourse.lab import experiment
from crashcourse.lab.example import FLOUR, NoNewReasoning, ScriptedModel
from crashcourse.lab.harness import Harness
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import immediate, opened, sql_list, table_rows
from crashcourse.waiting import wait_until
from crashcourse.workers.shop_worker import run_once

EVIDENCE_ID = "crashcourse/ch06_worker_recovery/1"
WORKER = ["-m", "crashcourse.workers.shop_worker"]
# lease, request wait, supplier hold bound (s). Short on purpose: expiry is
# REAL time, and every case waits it out (wait_for_expiry). What must fit in
# the lease is the child's claim-to-boundary step and the parent's competing
# claim: 2-40 ms measured here (60 samples at load 4-12, `make stress`
# running beside, issue 36). A recovery's claim-to-admission (a lookup at the
# supplier first) outran 0.3 s at load 15 (a notebook build beside a fresh
# clone's make verify: LeaseTooShort, the trial lost), so quick mode's lease is
# 1.2 s: 0.9 s for that step beyond the request's wait. Each case records its
# step (claim_to_check_s) so a lease outrun by the machine says so. The supplier's
# hold is NOT a race any more: it holds the old request until the
# replacement's is decided (--until-next); the seconds are only its bound.
TIMING = {"quick": (1.2, 0.3, 20.0), "full": (1.5, 0.8, 30.0)}
AGENT_TABLES = ("work", "claims", "refusals", "transcript", "orders")


class Case:
    """One case's files, processes and database reads."""

    def __init__(self, root: Path, harness: Harness, lease: float, wait: float):
        self.agent, self.harness = root / "agent.db", harness
        self.lease, self.wait = lease, wait
        with opened(self.agent) as conn:
            orders.install(conn)
            self.work = claims.enqueue(conn, "phone:restock-flour", "counter",
                                       "Restock flour: two sacks left")
        self.supplier = None
        # the parent's own instants (a kill, a freeze, a thaw, a cancel), for
        # the timeline drawn beside the evidence (crashcourse.figures.timeline)
        self.moments: list[dict] = []

    def mark(self, what: str) -> None:
        self.moments.append({"what": what, "at": time.time()})

    def supplier_up(self, *flags: str) -> None:
        self.supplier = start_supplier(self.harness, self.agent.with_name("sup.db"),
                                       *flags)

    def child(self, mode: str, stop_at: str | None = None, owner: str = "child"):
        named = ["--work", self.work] if mode != "run" else []  # run: any work
        return self.harness.start(
            [*WORKER, mode, "--db", str(self.agent), *named, "--owner", owner,
             "--ttl", str(self.lease), "--wait", str(self.wait),
             "--url", self.supplier.url], stop_at=stop_at)

    def competing_claim(self) -> tuple[dict | None, float]:
        """A second claim while the child's lease runs: None when refused; and
        the seconds from the child's claim to this one (what the lease must
        outlast for the refusal to say anything)."""
        with opened(self.agent) as conn:
            claim = claims.claim(conn, "competitor", ttl=self.lease)
            at = time.time()
            claimed_at = conn.execute("SELECT min(claimed_at) FROM claims"
                                      " WHERE work_id = ?", (self.work,)).fetchone()[0]
        return (None if claim is None else asdict(claim)), round(at - claimed_at, 3)

    def wait_for_expiry(self) -> None:
        """Sleep until the durable lease of the current claim has passed."""
        with opened(self.agent) as conn:
            expires = claims.work_row(conn, self.work)["expires"]
        if expires is not None:  # None: finished, nobody holds it
            time.sleep(max(0.0, expires - time.time()) + 0.05)

    def replace(self, model=None) -> dict | None:
        with opened(self.agent) as conn:
            return run_once(conn, "replacement", self.supplier.url,
                            model or NoNewReasoning(), ttl=5.0, wait_s=2.0)

    def agent_rows(self) -> dict:
        with opened(self.agent) as conn:
            return {table: table_rows(conn, table) for table in AGENT_TABLES}

    def supplier_rows(self) -> dict:
        with opened(self.supplier.db) as conn:
            return {table: table_rows(conn, table) for table in ("orders", "requests")}


def facts(case: Case) -> dict:
    """The counts every case reports, read from both databases, and those rows."""
    agent, remote = case.agent_rows(), case.supplier_rows()
    work = next(w for w in agent["work"] if w["id"] == case.work)
    order = next(o for o in agent["orders"] if o["work_id"] == case.work)
    claim_rows = [c for c in agent["claims"] if c["work_id"] == case.work]
    first = claim_rows[0]  # the child's claim: the competing one was refused
    return {
        "work_status": work["status"],
        # the lease the child's claim got, read back from its row
        "lease_s": round(first["expires"] - first["claimed_at"], 3),
        "generations": [c["generation"] for c in claim_rows],
        "replacement_claimed_after_expiry": len(claim_rows) >= 2
        and claim_rows[1]["claimed_at"] >= claim_rows[0]["expires"],
        "proposals_after_generation_1": sum(
            1 for t in agent["transcript"]
            if t["generation"] > 1 and '"proposal"' in t["message"]),
        "stale_transcript_rows": sum(
            1 for t in agent["transcript"]
            if t["generation"] == 1 and '"late"' in t["message"]),
        "refused_actions_gen1": sorted(
            r["action"] for r in agent["refusals"] if r["generation"] == 1),
        "supplier_orders": len(remote["orders"]),
        "supplier_orders_with_key": sum(
            1 for o in remote["orders"]
            if o["operation_key"] == order["operation_key"]),
        "supplier_posts": [(r["generation"], r["answer"]) for r in remote["requests"]
                           if r["method"] == "POST"],
        "agent_order_status": order["status"],
        "rows": {"agent": agent, "supplier": remote},  # what it was judged from
    }


def killed_holder(case: Case) -> dict:
    case.supplier_up()
    child = case.child("hold", stop_at="holding")
    child.wait_for_boundary(experiment.TIMEOUT)
    competing, step = case.competing_claim()
    killed = child.kill()
    killed_at = time.time()
    case.wait_for_expiry()
    case.replace()
    found = facts(case) | {"child_exit": killed.returncode, "claim_to_check_s": step,
                           "competing_claim": competing, "killed_at_unix": killed_at}
    found["holds"] = (killed.returncode == -9 and competing is None
                      and common_holds(found, case.lease))
    return found | outrun(competing, step, case.lease)


def live_stale_holder(case: Case) -> dict:
    case.supplier_up()
    child = case.child("hold", stop_at="holding")
    child.wait_for_boundary(experiment.TIMEOUT)
    competing, step = case.competing_claim()
    case.wait_for_expiry()
    case.replace()
    alive_during_replacement = child.alive()
    child.release()
    finished = child.finish(experiment.TIMEOUT)
    found = facts(case) | {"child_exit": finished.returncode,
                           "competing_claim": competing, "claim_to_check_s": step,
                           "child_alive_during_replacement": alive_during_replacement}
    found["holds"] = (competing is None and alive_during_replacement
                      and finished.returncode == 0
                      and common_holds(found, case.lease)
                      and found["refused_actions_gen1"] == ["finish", "observe", "send"]
                      and found["stale_transcript_rows"] == 0)
    return found | outrun(competing, step, case.lease)


def outrun(competing: dict | None, step: float, lease: float) -> dict:
    """The reason when a competing claim was granted because the machine took
    longer than the lease to get from the child's claim to the check: the
    experiment did not test the fence then, and says so (issue 36)."""
    if competing is None or step < lease:
        return {}
    return {"error": f"the competing claim came {step} s after the child's claim,"
                     f" past its {lease} s lease: the machine outran the lease"}


def frozen_after_admit(case: Case) -> dict:
    case.supplier_up()
    child = case.child("send", stop_at="after_sending_recorded")
    child.wait_for_boundary(experiment.TIMEOUT)
    status_when_frozen = case.agent_rows()["orders"][0]["status"]
    child.freeze()  # SIGSTOP: alive, admitted, its request not yet sent
    case.mark("freeze")
    child.release()  # it will read this once thawed
    case.wait_for_expiry()
    case.replace()
    alive_during_replacement = child.alive()
    posts_before_thaw = len(case.supplier_rows()["requests"])
    child.thaw()
    case.mark("thaw")
    finished = child.finish(experiment.TIMEOUT)
    found = facts(case) | {"child_exit": finished.returncode,
                           "agent_order_when_frozen": status_when_frozen,
                           "child_alive_during_replacement": alive_during_replacement,
                           "supplier_requests_before_thaw": posts_before_thaw}
    found["holds"] = (status_when_frozen == orders.SENDING and alive_during_replacement
                      and common_holds(found, case.lease)
                      and found["supplier_posts"] == [(2, 201), (1, 412)])
    return found


def lost_ack(case: Case) -> dict:
    case.supplier_up()
    with opened(case.agent) as conn:
        other = claims.enqueue(conn, "mail:price-list", "back-office",
                               "Restock sugar from the new price list")
    child = case.child("send", stop_at="before_receipt")
    child.wait_for_boundary(experiment.TIMEOUT)
    killed = child.kill()
    case.mark("kill")
    status_at_kill = case.agent_rows()["orders"][0]["status"]
    seen_at_kill = len(case.supplier_rows()["requests"])  # the child's, all of them
    case.wait_for_expiry()
    first = case.replace()
    second = case.replace(ScriptedModel(FLOUR))
    found = facts(case)
    rows = found["rows"]
    methods = [r["method"] for r in rows["supplier"]["requests"]]
    found |= {"child_exit": killed.returncode, "agent_order_at_kill": status_at_kill,
              "claims_after_kill": ["restock" if c["work_id"] == case.work
                                    else "unrelated"
                                    for c in rows["agent"]["claims"][1:]],
              "supplier_requests_before_kill": methods[:seen_at_kill],
              "supplier_requests_after_kill": methods[seen_at_kill:]}
    found["holds"] = (killed.returncode == -9 and status_at_kill == orders.SENDING
                      and first["work"] == case.work and second["work"] == other
                      and methods[:seen_at_kill] == ["POST"]
                      and methods[seen_at_kill:] == ["GET"]
                      and common_holds(found, case.lease))
    return found


def crash_during_recovery(case: Case, rng: random.Random) -> dict:
    case.supplier_up()
    child = case.child("send", stop_at="after_sending_recorded")
    child.wait_for_boundary(experiment.TIMEOUT)
    killed = child.kill()  # admitted (SENDING), nothing sent
    case.mark("kill")
    recoveries = []
    # The recovery itself killed: admitted again but not sent; sent but its
    # receipt not recorded; then at a random instant of a third one.
    for n, where in enumerate(("after_sending_recorded", "before_receipt", None)):
        case.wait_for_expiry()
        claimed = len(case.agent_rows()["claims"])
        replacement = case.child("run", stop_at=where, owner=f"recovery-{n}")
        if where is not None:
            replacement.wait_for_boundary(experiment.TIMEOUT)
        else:
            time.sleep(rng.uniform(0.0, 0.3))
        ended = not replacement.alive()
        status = (replacement.finish(experiment.TIMEOUT) if ended
                  else replacement.kill()).returncode
        case.mark("ended by itself" if ended else f"kill recovery-{n}")
        recoveries.append({"killed_at": where or "random instant", "exit": status,
                           "ran_to_the_end": ended,
                           "claimed": len(case.agent_rows()["claims"]) > claimed})
    case.wait_for_expiry()
    case.replace()  # the last recovery, left to finish
    found = facts(case) | {"child_exit": killed.returncode, "recoveries": recoveries}
    found["holds"] = (killed.returncode == -9 and common_holds(found, case.lease)
                      and [r["exit"] for r in recoveries[:2]] == [-9, -9]
                      and found["supplier_posts"] == [(3, 201)])
    return found


def fenced_at_supplier(case: Case, hold: float) -> dict:
    case.supplier_up("--hold-first", str(hold), "--until-next")
    child = case.child("send")
    # the child's own wait runs out first: it records UNKNOWN and exits
    finished = child.finish(experiment.TIMEOUT)
    case.mark("child exited")
    status_after_child = case.agent_rows()["orders"][0]["status"]
    case.wait_for_expiry()
    case.replace()
    # the held request is still asleep inside the supplier until it is decided
    wait_until(lambda: len(case.supplier_rows()["requests"]) >= 3,
               hold + experiment.TIMEOUT, interval=0.05,
               what="the held request decided by the supplier")
    found = facts(case)
    found |= {"child_exit": finished.returncode,
              "agent_order_after_child": status_after_child,
              "accepted_generation": [
                  o["generation"] for o in found["rows"]["supplier"]["orders"]]}
    found["holds"] = (status_after_child == orders.UNKNOWN
                      and common_holds(found, case.lease)
                      and found["supplier_posts"] == [(2, 201), (1, 412)]
                      and found["accepted_generation"] == [2])
    return found


# --- a cancel while the holder is frozen after its admission (issue 29) ------


def stopped(pid: int) -> bool:
    """Whether /proc shows ``pid`` stopped (state T): a SIGSTOP is delivered
    when the kernel next schedules the process, not when it is sent."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] in ("T", "t")


def freeze_seen(child) -> None:
    """SIGSTOP, then wait (bounded) until the kernel shows it stopped."""
    child.freeze()
    wait_until(lambda: stopped(child.pid), experiment.TIMEOUT, interval=0.005,
               what=f"worker {child.pid} stopped (state T)")


def settle_fenced(case: Case) -> dict:
    """The runtime's settlement: cancel and revoke in one transaction, then
    ``orders.settle_cancelled`` (the supplier's fence, then the lookup)."""
    with opened(case.agent) as conn:
        with immediate(conn):
            fence.cancel_locked(conn, case.work, time.time())
            orders.revoke_unsent(conn, case.work)
        return orders.settle_cancelled(conn, case.work, case.supplier.url)


def settle_lookup_only(case: Case) -> dict:
    """The negative control: the same cancel, then a lookup of each uncertain
    order and nothing else: the supplier never hears of the cancel."""
    with opened(case.agent) as conn:
        with immediate(conn):
            fence.cancel_locked(conn, case.work, time.time())
            orders.revoke_unsent(conn, case.work)
        uncertain = conn.execute(
            "SELECT operation_key FROM orders WHERE work_id = :id"
            f" AND status IN {sql_list(orders.UNCERTAIN)}",
            {"id": case.work}).fetchall()
        return {key: orders.lookup(conn, key, case.supplier.url)
                for (key,) in uncertain}


def cancelled_while_frozen(case: Case, settle, fenced: bool) -> dict:
    """The child admitted (SENDING) and frozen before its POST leaves; the
    operator cancels and ``settle``s; the child is thawed and POSTs. Judged
    from the supplier's rows and the shop's, not from the child."""
    case.supplier_up()
    child = case.child("send", stop_at="after_sending_recorded")
    child.wait_for_boundary(experiment.TIMEOUT)
    status_when_frozen = case.agent_rows()["orders"][0]["status"]
    try:
        freeze_seen(child)
        case.mark("freeze")
        child.release()  # read once it runs again
        case.mark("cancel")
        settled = settle(case)
        seen_before_thaw = [(r["method"], r["generation"], r["answer"])
                            for r in case.supplier_rows()["requests"]]
    finally:
        child.thaw()  # thawed before anything else, an assertion included
        case.mark("thaw")
    finished = child.finish(experiment.TIMEOUT)
    agent, remote = case.agent_rows(), case.supplier_rows()
    work = next(w for w in agent["work"] if w["id"] == case.work)
    order = next(o for o in agent["orders"] if o["work_id"] == case.work)
    first = next(c for c in agent["claims"] if c["work_id"] == case.work)
    found = {
        "work_status": work["status"],
        "lease_s": round(first["expires"] - first["claimed_at"], 3),
        "agent_order_when_frozen": status_when_frozen,
        "settled": sorted(settled.values()),
        "supplier_requests_before_thaw": seen_before_thaw,
        "supplier_requests": [(r["method"], r["generation"], r["answer"])
                              for r in remote["requests"]],
        "supplier_posts": [(r["generation"], r["answer"]) for r in remote["requests"]
                           if r["method"] == "POST"],
        "supplier_orders": len(remote["orders"]),
        "agent_order_status": order["status"],
        "child_exit": finished.returncode,  # reported, not judged
        "negative_control": not fenced,
        "rows": {"agent": agent, "supplier": remote},
    }
    cancelled = (status_when_frozen == orders.SENDING
                 and work["status"] == claims.CANCELLED)
    if fenced:  # the late POST refused; the shop's REVOKED is the truth
        found["holds"] = (cancelled and found["settled"] == [orders.REVOKED]
                          and seen_before_thaw == [("FENCE", 2, 200),
                                                   ("GET", None, 404)]
                          and found["supplier_posts"] == [(1, 412)]
                          and found["supplier_orders"] == 0
                          and order["status"] == orders.REVOKED)
    else:  # the lookup's NOT_FOUND proved nothing: an order for cancelled work
        found["holds"] = (cancelled and found["settled"] == [orders.NOT_FOUND]
                          and seen_before_thaw == [("GET", None, 404)]
                          and found["supplier_posts"] == [(1, 201)]
                          and found["supplier_orders"] == 1)
    return found


def common_holds(found: dict, lease: float) -> bool:
    """What every case needs: the child's claim got the configured lease, one
    order at the supplier, generation 2 finished it after real expiry, and no
    new proposal from a model."""
    return (found["lease_s"] == round(lease, 3)
            and found["work_status"] == claims.DONE
            and found["generations"][:2] == [1, 2]
            and found["replacement_claimed_after_expiry"]
            and found["proposals_after_generation_1"] == 0
            and found["supplier_orders"] == found["supplier_orders_with_key"] == 1
            and found["agent_order_status"] == orders.CONFIRMED)


def run_case(harness: Harness, folder: Path, name: str, one_case, lease: float,
             wait: float) -> dict:
    case = Case(folder, harness, lease, wait)
    return {"case": name, **one_case(case), "moments": case.moments}


def run(args) -> tuple[dict, list[dict]]:
    mode = "quick" if args.quick else "full"
    lease, wait, hold = TIMING[mode]
    rng = random.Random(args.seed)
    cases = {"killed_holder": killed_holder, "live_stale_holder": live_stale_holder,
             "frozen_after_admit": frozen_after_admit, "lost_ack": lost_ack,
             "crash_during_recovery": lambda case: crash_during_recovery(case, rng),
             "fenced_at_supplier": lambda case: fenced_at_supplier(case, hold),
             "cancelled_while_frozen": lambda case: cancelled_while_frozen(
                 case, settle_fenced, fenced=True),
             "cancelled_while_frozen_lookup_only": lambda case: cancelled_while_frozen(
                 case, settle_lookup_only, fenced=False)}
    trials = experiment.run_trials(
        [experiment.Trial(name, {"case": name}, (name, one_case, lease, wait))
         for name, one_case in cases.items()], run_case, timed="elapsed_s")
    summary = {"mode": mode, "seed": args.seed, "cases": len(trials),
               "lease_configured_s": lease,
               "held": sum(1 for t in trials if t["holds"])}
    return summary, trials


main = experiment.script(
    __file__, evidence_id=EVIDENCE_ID, run=run, parser=experiment.command_line(
        __doc__, seed=6,
        quick_help="shorter leases and supplier hold, what the test suite runs"))

if __name__ == "__main__":
    sys.exit(main())
