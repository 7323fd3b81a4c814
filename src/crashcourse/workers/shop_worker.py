"""The shop worker of chapters 05-06: claim, order from the supplier, finish.

    python -m crashcourse.workers.shop_worker MODE --db PATH [options]

Modes (the parent picks one per experiment):

``hold``   claim, store a signed-off order, stop at boundary ``holding``; when
           released, try three writes with the old claim (observe, finish,
           send) and print which were refused.
``send``   claim, store a signed-off order and send it (boundaries
           ``after_sending_recorded`` and ``before_receipt`` in ``orders.send``).
``drain``  claim -> observe -> finish until nothing is eligible, or until
           ``--limit`` claims (chapter 05's many-process test; no supplier).
           ``--read-first`` drains with the MUTANT ``claim_read_first``, the
           race's negative control. Boundary ``chosen``: the claim has picked
           its row and not yet written the grant (chapter 05's forced
           schedule); the mutant is there outside the write lock, the
           reference claim (on SQLite) inside it.
``run``    one ``run_once`` pass, the replacement's code path.

The worker prints one JSON line; graders read the databases, not this line.
Exit status: 0 done; 2 bad input (an unknown mode or option, a blank owner or
work id, a lease or wait out of range, no ``--url`` where one is sent to, a
``--db`` that is not the agent's installed, sound store (damaged, cut short:
left as it was), or a ``--wait`` that does not fit in ``--ttl`` where a
request is sent): one line on stderr, nothing written; 3 ``hold`` or
``send`` found nothing to claim; 4 ``send``: the supplier refused the order
as stale; 5 held: another process kept the agent's file's write lock past
the busy timeout (a holder paused mid-write, issue 35; ``drain`` first waits
it out twenty times, ``patiently``): the transaction that waited wrote
nothing (one JSON line, ``held``); 6 ``send`` or ``run``: the lease no longer
covered the request's wait when the order was to be admitted (a loaded machine
or a pause outran it): nothing sent, the order as it was, one line on stderr;
74 the machine refused a file mid-run (one line on stderr).
"""

from __future__ import annotations

import json
import sqlite3
import sys

from crashcourse import claims, control, store
from crashcourse.boundary import boundary
from crashcourse.claims import fence, orders
from crashcourse.lab.example import FLOUR, NoNewReasoning, ScriptedModel
from crashcourse.store import StoreMissing, immediate, opened
from crashcourse.validate import check_text, seconds
from crashcourse.workers.options import (
    argument_parser,
    check_installed,
    one_line_errors,
    refuse,
    whole_number,
)

NOTHING_TO_CLAIM = 3  # exit status of hold and send when no work is eligible
STALE_AT_SUPPLIER = 4  # exit status of send when the supplier refused it (412)
HELD = 5  # exit status: another process kept the agent's file locked
LEASE_OUTRUN = 6  # exit status: the lease no longer covered the request's wait
SIGNED_OFF = "signed_off"  # boundary: the order signed off, not yet admitted
CHOSEN = claims.CHOSEN  # the same point in the mutant and in claim_sqlite
MAX_LIMIT = 1_000_000  # claims one drain may take; more is a typo
MAX_WAIT = 60.0  # seconds for one supplier request; longer is a typo
# What the order's status means for the work once this pass is over.
FINAL = {orders.CONFIRMED: claims.DONE, orders.REJECTED: claims.DONE,
         orders.DRAFT: claims.BLOCKED, orders.REVOKED: claims.CANCELLED}


def run_once(conn, owner: str, url: str, model, *, ttl: float = 5.0,
             wait_s: float = 2.0) -> dict | None:
    """One pass: recovery work first, then ordinary; None if nothing is eligible.

    Work with an order continues from that record and never calls ``model``.
    Cancelled work, which no claim takes, has its uncertain orders settled
    first (``orders.settle_all_cancelled``: the supplier fenced, then asked)
    (chapter 06)."""
    orders.settle_all_cancelled(conn, url, wait_s)
    claim = (orders.claim_recovery(conn, owner, ttl=ttl)
             or claims.claim(conn, owner, ttl=ttl))
    if claim is None:
        return None
    report = {"work": claim.id, "generation": claim.generation}
    order = orders.order_for(conn, claim.id)
    if order is None:
        orders.propose(conn, claim, model)
        fence.finish(conn, claim, claims.BLOCKED, "waiting for sign-off")
        return report | {"status": claims.BLOCKED}
    status, operation_key = order["status"], order["operation_key"]
    if status in orders.UNCERTAIN:
        status = orders.lookup(conn, operation_key, url, claim, wait_s)
    if status in (orders.SIGNED_OFF, orders.NOT_FOUND):
        status = orders.send(conn, claim, operation_key, url, wait_s)
    final = FINAL.get(status)
    if final is None:  # still UNKNOWN: keep the lease short, try again later
        fence.finish(conn, claim, claims.BLOCKED, "supplier outcome unknown")
        return report | {"status": claims.BLOCKED}
    fence.observe(conn, claim, {"kind": "outcome", "order": status})
    fence.finish(conn, claim, final, status)
    return report | {"status": final}


class NothingToClaim(LookupError):
    """``hold`` and ``send`` found no eligible work (chapter 06)."""


def take_and_sign_off(conn, args) -> tuple[claims.Claim, str]:
    """Claim, propose with the scripted model, sign off as the operator would.

    Introduced in chapter 06."""
    claim = claims.claim(conn, args.owner, ttl=args.ttl, work_id=args.work)
    if claim is None:
        raise NothingToClaim("nothing to claim")
    operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
    orders.sign_off(conn, operation_key)  # the operator's, stored before the wait
    boundary(SIGNED_OFF)
    return claim, operation_key


def stale_attempts(conn, claim, operation_key, url) -> dict:
    """Try the three guarded writes with a claim that may be stale (chapter 06)."""
    attempts = {
        "observe": lambda: fence.observe(conn, claim, {"kind": "late", "text": "old"}),
        "finish": lambda: fence.finish(conn, claim, claims.DONE, "old holder's result"),
        "send": lambda: orders.send(conn, claim, operation_key, url, wait_s=0.5),
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


def claim_read_first(conn, owner: str, *, ttl: float) -> claims.Claim | None:
    """MUTANT (chapter 05; ``host_worker drain --read-first`` on a server,
    chapter 10): the oldest queued row is chosen BEFORE the write lock, and
    the grant inside it (``claims.grant_locked``) does not look again, so two
    workers that chose the same row both take it (the second as the next
    generation). The negative control of the race; the session rule is left
    out."""
    order = store.dialect(conn).insertion_order  # rowid, or a server's seq
    row = conn.execute(  # a read with no write lock: the mistake
        f"SELECT * FROM work WHERE status = '{claims.READY}'"
        f" ORDER BY created, {order} LIMIT 1").fetchone()
    if row is None:
        return None
    boundary(CHOSEN)  # the gap: chosen, no lock held, nothing granted yet
    with immediate(conn):
        return claims.grant_locked(conn, row, owner, ttl, store.now(conn),
                                   control.runtime(conn)["epoch"])


def drain(conn, owner: str, ttl: float, take=claims.claim,
          limit: int | None = None) -> dict:
    """Claim (with ``take``), observe, finish until nothing is eligible or
    ``limit`` claims were taken: how many finished, and how many claims the
    fence found stale before their writes (none, unless ``take`` is the
    mutant). Introduced in chapter 05."""
    done = stale = 0
    while ((limit is None or done + stale < limit)
           and (claim := patiently(lambda: take(conn, owner, ttl=ttl)))):
        try:
            patiently(lambda: fence.observe(conn, claim, {"kind": "done",
                                                          "by": owner}))
            patiently(lambda: fence.finish(conn, claim, claims.DONE, owner))
            done += 1
        except fence.StaleClaim:  # another worker took it meanwhile: move on
            stale += 1
    return {"finished": done, "stale": stale}


@one_line_errors(held=HELD)
def main(argv: list[str] | None = None) -> int:
    """Run one mode on the agent's file and print its report (chapters 05-06)."""
    args = parse(argv)
    try:
        check(args)
    except (TypeError, ValueError, StoreMissing) as bad:
        return refuse(bad)
    try:
        with opened(args.db) as conn:
            if args.mode == "drain":
                take = claim_read_first if args.read_first else claims.claim
                report = drain(conn, args.owner, args.ttl, take, args.limit)
            elif args.mode == "run":
                report = run_once(conn, args.owner, args.url, NoNewReasoning(),
                                  ttl=args.ttl, wait_s=args.wait)
            else:
                try:
                    claim, operation_key = take_and_sign_off(conn, args)
                except NothingToClaim as nothing:
                    print(nothing, file=sys.stderr)
                    return NOTHING_TO_CLAIM
                if args.mode == "send":
                    try:
                        report = {"send": orders.send(conn, claim, operation_key,
                                                      args.url, args.wait)}
                    except orders.StaleAtSupplier as fenced:  # the order stays as
                        print(f"refused by the supplier: {fenced}",  # settled
                              file=sys.stderr)
                        return STALE_AT_SUPPLIER
                else:
                    boundary("holding")
                    report = stale_attempts(conn, claim, operation_key, args.url)
    except orders.LeaseTooShort as short:  # admitted nothing: a later run takes it
        print(f"not sent: {short} (its lease ran low before the admission: a"
              " loaded machine or a pause); the order is as it was", file=sys.stderr)
        return LEASE_OUTRUN
    print(json.dumps(report, sort_keys=True))
    return 0


def check(args) -> None:
    """Refuse bad input, and a ``--db`` that is not the agent's installed
    store, before anything is written (chapters 05-06)."""
    claims.check_lease(args.owner, args.ttl)
    if args.work is not None:
        check_text("--work", args.work)
    if args.limit is not None and not 0 < args.limit <= MAX_LIMIT:
        raise ValueError(f"--limit must be 1 to {MAX_LIMIT}, got {args.limit}")
    if not (isinstance(args.wait, float) and 0 < args.wait <= MAX_WAIT):  # NaN too
        raise ValueError(f"--wait must be above 0 and at most {MAX_WAIT:.0f} s")
    tables = ("work", "claims", "transcript")  # what a drain reads and writes
    if args.mode != "drain":
        check_text("--url", args.url)
        tables += ("orders",)
    if args.mode in ("send", "run") and not args.wait < args.ttl:
        raise ValueError(f"--wait {args.wait} s does not fit in the --ttl "
                         f"{args.ttl} s lease: a request must end inside it")
    # The agent's own file, with the full integrity check: a damaged index
    # there hides a claim or an order from its lookup (issue 35).
    check_installed((args.db, tables))


def parse(argv: list[str] | None):
    """The command line above; a bad one is one line and exit 2 (ch. 05-06)."""
    parser = argument_parser(__doc__.split("\n\n")[0],
                             epilog=__doc__.split("\n\n")[-1].strip())
    parser.add_argument("mode", choices=("hold", "send", "drain", "run"))
    parser.add_argument("--db", required=True, help="the agent's SQLite file")
    parser.add_argument("--owner", default="shop-worker")
    parser.add_argument("--ttl", type=seconds, default=1.0, help="lease seconds")
    parser.add_argument("--work", help="claim this work id only")
    parser.add_argument("--url", default="", help="supplier base URL")
    parser.add_argument("--wait", type=seconds, default=0.5, help="request timeout")
    parser.add_argument("--read-first", action="store_true",
                        help="drain with the mutant claim (chapter 05)")
    parser.add_argument("--limit", type=whole_number, metavar="N",
                        help="drain: stop after N claims (default: none)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
