"""The shop worker of chapters 05-06: claim, order from the supplier, finish.

    python -m crashcourse.workers.shop_worker MODE --db PATH [options]

Modes (the parent picks one per experiment):

``hold``   claim, store an approved order, stop at boundary ``holding``; when
           released, try three writes with the old claim (observe, finish,
           send) and print which were refused.
``send``   claim, store an approved order and send it (boundaries
           ``after_sending_recorded`` and ``before_receipt`` in ``orders.send``).
``drain``  claim -> observe -> finish until nothing is eligible (chapter 05's
           many-process test; no supplier).
``run``    one ``run_once`` pass, the replacement's code path.

The worker prints one JSON line; graders read the databases, not this line.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys

from crashcourse import claims, fence, orders
from crashcourse.boundary import boundary
from crashcourse.store import opened

FLOUR = orders.Proposal("flour-25kg", 6, 2150)


def run_once(conn, owner: str, url: str, model, *, ttl: float = 5.0,
             wait_s: float = 2.0) -> dict | None:
    """One pass: recovery work first, then ordinary; None if nothing is eligible.

    Work with an order continues from that record and never calls ``model``
    (chapter 06)."""
    held = (claims.claim(conn, owner, ttl=ttl, recovery_only=True)
            or claims.claim(conn, owner, ttl=ttl))
    if held is None:
        return None
    order = orders.order_for(conn, held.id)
    if order is None:
        orders.propose(conn, held, model)
        fence.finish(conn, held, "BLOCKED", "waiting for approval")
        return {"work": held.id, "generation": held.generation, "status": "BLOCKED"}
    status = order["status"]
    if status in orders.UNCERTAIN:
        status = orders.lookup(conn, order["op_id"], url, held, wait_s)
    if status in ("APPROVED", "NOT_FOUND"):
        status = orders.send(conn, held, order["op_id"], url, wait_s)
    final = {"CONFIRMED": "DONE", "REJECTED": "DONE", "DRAFT": "BLOCKED",
             "REVOKED": "CANCELLED"}.get(status)
    if final is None:  # still UNKNOWN: keep the lease short, try again later
        fence.finish(conn, held, "BLOCKED", "supplier outcome unknown")
        return {"work": held.id, "generation": held.generation, "status": "BLOCKED"}
    fence.observe(conn, held, {"kind": "outcome", "order": status})
    fence.finish(conn, held, final, status)
    return {"work": held.id, "generation": held.generation, "status": final}


def take_and_approve(conn, args) -> tuple[claims.Claim, str]:
    """Claim, propose with the scripted model, approve as the operator would."""
    held = claims.claim(conn, args.owner, ttl=args.ttl, work_id=args.work)
    if held is None:
        raise SystemExit("nothing to claim")
    op_id = orders.propose(conn, held, orders.ScriptedModel(FLOUR))
    orders.approve(conn, op_id)  # the operator's approval, stored before the wait
    return held, op_id


def stale_attempts(conn, held, op_id, url) -> dict:
    """Try the three guarded writes with a claim that may be stale (chapter 06)."""
    attempts = {
        "observe": lambda: fence.observe(conn, held, {"kind": "late", "text": "old"}),
        "finish": lambda: fence.finish(conn, held, "DONE", "old holder's result"),
        "send": lambda: orders.send(conn, held, op_id, url, wait_s=0.5),
    }
    outcome = {}
    for name, attempt in attempts.items():
        try:
            attempt()
            outcome[name] = "written"
        except PermissionError as refused:
            outcome[name] = f"refused: {type(refused).__name__}"
    return outcome


def patiently(step, attempts: int = 20):
    """Run ``step`` again while SQLite stays busy past its timeout (bounded).

    A busy database means "not done": the same checked step is retried; it
    never falls back to an unchecked one (chapter 05)."""
    for _ in range(attempts - 1):
        try:
            return step()
        except sqlite3.OperationalError as busy:
            if "locked" not in str(busy):
                raise
    return step()


def drain(conn, owner: str, ttl: float) -> int:
    """Claim, observe, finish until nothing is eligible; how many finished.

    Introduced in chapter 06."""
    done = 0
    while (held := patiently(lambda: claims.claim(conn, owner, ttl=ttl))):
        patiently(lambda: fence.observe(conn, held, {"kind": "done", "by": owner}))
        patiently(lambda: fence.finish(conn, held, "DONE", owner))
        done += 1
    return done


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    with opened(args.db) as conn:
        if args.mode == "drain":
            report = {"finished": drain(conn, args.owner, args.ttl)}
        elif args.mode == "run":
            report = run_once(conn, args.owner, args.url, orders.NoNewReasoning(),
                              ttl=args.ttl, wait_s=args.wait)
        else:
            held, op_id = take_and_approve(conn, args)
            if args.mode == "send":
                report = {"send": orders.send(conn, held, op_id, args.url, args.wait)}
            else:
                boundary("holding")
                report = stale_attempts(conn, held, op_id, args.url)
    print(json.dumps(report, sort_keys=True))
    return 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("hold", "send", "drain", "run"))
    parser.add_argument("--db", required=True, help="the agent's SQLite file")
    parser.add_argument("--owner", default="shop-worker")
    parser.add_argument("--ttl", type=float, default=1.0, help="lease seconds")
    parser.add_argument("--work", help="claim this work id only")
    parser.add_argument("--url", default="", help="supplier base URL")
    parser.add_argument("--wait", type=float, default=0.5, help="request timeout")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
