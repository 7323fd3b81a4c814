"""The worker a host runs in chapter 10: the shop's restock work, on a store
shared by every host, talking to the supplier over TCP from its own host.

    python -m crashcourse.workers.host_worker MODE --store ADDRESS
        [--supplier URL] [--owner NAME] [--ttl S] [--wait S] [--patience S]
        [--hold-after-send | --hold-mid-write] [--work ID] [--start-on-go]
        [--no-fence] [--read-first]

``--store`` is the store's address: ``postgresql://...?schema=S`` on a
server (a SQLite path works too: the same code); ``--supplier`` is the
supplier's URL as this host reaches it. Modes:

``hold``  the holder that will be cut off: claim, propose (the scripted
          model), sign off, admit the order (SENDING: a fenced write, passed
          while current) and open a connection to the supplier, as an HTTP
          client's pool keeps one; print ``ready``. Then wait for a line on
          stdin: meanwhile the parent cuts this host's link (or freezes it).
          Then POST the order on that connection, and write late: a
          transcript line and the finish. ``--no-fence`` makes those two
          writes without the fence: the mutant the chapter opens with.
``drain`` print ``ready``, wait for stdin (so every racer starts at once),
          claim one turn, print ``claimed`` and wait for stdin again (so no
          racer drains the queue before every other has claimed: who ran
          first decides nothing), then finish it and claim and finish until
          nothing is eligible (no supplier).
          ``--read-first`` claims with the MUTANT ``shop_worker.claim_read_first`` (the
          turn chosen by a plain read, before any lock): the race's negative
          control.
``work``  claim (recovery first, then ordinary work), order, finish, until no
          work is open, waiting up to ``--patience`` s for leases held
          elsewhere to run out. ``--hold-after-send``: once the supplier has
          answered the first order, before the answer is recorded, print
          ``sent`` and wait for stdin (the parent kills the host there).
          ``--hold-mid-write``: at the same moment, open a fenced write
          (checked, the work row locked, not committed), print ``writing``
          and wait for stdin inside it. Both lines carry ``backend``, the
          server process of this worker's connection (None on SQLite);
          ``sent`` also its lease's end, by the store's clock.
          ``--work ID``: take that piece and no other (a held worker
          whose start-up outlasted another's lease would otherwise recover
          that other piece first and never reach its hold). A held worker
          that ends without reaching its hold exits 5 and says what it did.
          ``--start-on-go``: print ``ready`` and wait for stdin first (the
          parent starts it early, and lets it claim when the case needs it).

Each ends with one JSON line (graders read rows, not it). Exit status: 0
done; 2 bad input (one line on stderr, nothing written); 3 ``hold`` found
nothing to claim; 4 held: another process kept the store's write lock (a
row's, on a server) past the busy timeout (a holder paused mid-write, issue
35), the transaction that waited wrote nothing (one JSON line, ``held``); 5
told to hold, it ended without reaching the hold (what it did and saw on
stderr); 74 the machine refused a file mid-run (one line on stderr); 97 held
and never released (after ``CRASHCOURSE_HOLD_SECONDS``, as a boundary).
"""

from __future__ import annotations

import json
import select
import sys
import time
from dataclasses import asdict
from http.client import HTTPConnection
from urllib.parse import urlsplit

from crashcourse import claims, store
from crashcourse.boundary import HOLD_EXPIRED, hold_seconds, observing
from crashcourse.claims import fence, orders
from crashcourse.lab.example import FLOUR, ScriptedModel
from crashcourse.services import supplier as supplier_client
from crashcourse.store import StoreMissing, opened, sql_list
from crashcourse.validate import check_text, seconds
from crashcourse.workers.options import (
    argument_parser,
    check_installed,
    one_line_errors,
    refuse,
)
from crashcourse.workers.shop_worker import (
    FINAL,
    NothingToClaim,
    claim_read_first,
    patiently,
)

NOTHING_TO_CLAIM = 3
HELD = 4  # another process kept the store's lock past the busy timeout
NEVER_HELD = 5
TABLES = ("work", "claims", "transcript", "refusals", "orders")
LATE = {"kind": "late", "text": "ordering 6 sacks"}  # what the cut-off holder says


def say(word: str, **facts) -> None:
    print(word, json.dumps(facts, sort_keys=True), flush=True)  # to the parent


def wait_for_parent(word: str, **facts) -> None:
    """Say ``word``; hold until the parent writes a line on stdin, bounded as
    a boundary is (``crashcourse.boundary.hold_seconds``: the harness's
    ``CRASHCOURSE_HOLD_SECONDS``, else 30 s): never go on by ourselves."""
    bound = hold_seconds()  # a bad bound was refused at start (main)
    say(word, **facts)
    ready, _, _ = select.select([sys.stdin], [], [], bound)
    if not ready or not sys.stdin.readline():
        sys.exit(HOLD_EXPIRED)


def pooled(url: str, wait_s: float) -> HTTPConnection:
    """A connection to the supplier, opened now and kept for later."""
    connection = HTTPConnection(urlsplit(url).netloc, timeout=wait_s)
    connection.connect()
    return connection


def post_pooled(connection: HTTPConnection, operation_key: str,
                claim: claims.Claim, proposal: orders.Proposal):
    """``orders.post``'s request (key, fencing token, proposal) on a kept
    connection: ``(status, answer)``, or None when no answer came in time.
    None does not mean it never arrived: bytes a cut link dropped are sent
    again by the kernel when it returns, even after we stop listening."""
    headers = supplier_client.headers(operation_key, claim.token)
    try:
        connection.request("POST", "/orders", json.dumps(asdict(proposal)), headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    except (OSError, ValueError):
        return None
    finally:
        connection.close()


def observe_unfenced(conn, claim: claims.Claim, message: dict) -> None:
    """MUTANT (``--no-fence``): a transcript row, with no holder check."""
    conn.execute("INSERT INTO transcript (work_id, generation, message)"
                 " VALUES (:id, :generation, :message)",
                 {"id": claim.id, "generation": claim.generation,
                  "message": json.dumps(message, sort_keys=True)})


def finish_unfenced(conn, claim: claims.Claim, outcome: str) -> None:
    """MUTANT (``--no-fence``): DONE and its outcome, with no holder check."""
    conn.execute(f"UPDATE work SET status = '{claims.DONE}', outcome = :outcome,"
                 " expires = NULL WHERE id = :id", {"outcome": outcome, "id": claim.id})


def late_writes(conn, claim: claims.Claim, fenced: bool) -> dict:
    """The cut-off holder's writes once it can reach the store again."""
    outcome = f"{claim.owner}: 6 sacks ordered"
    writes = {"observe": lambda: fence.observe(conn, claim, LATE),
              "finish": lambda: fence.finish(conn, claim, claims.DONE, outcome)}
    if not fenced:
        writes = {"observe": lambda: observe_unfenced(conn, claim, LATE),
                  "finish": lambda: finish_unfenced(conn, claim, outcome)}
    done = {}
    for name, write in writes.items():
        try:
            write()
            done[name] = "written"
        except fence.StaleClaim as refused:
            done[name] = f"refused: {refused.reason}"
    return done


def hold(conn, args) -> dict:
    """The ``hold`` mode above: admitted while current, sent after the cut."""
    claim = claims.claim(conn, args.owner, ttl=args.ttl)
    if claim is None:
        raise NothingToClaim("nothing to claim")
    operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
    orders.sign_off(conn, operation_key)  # the operator's, given in advance
    proposal = orders.admit(conn, claim, operation_key, args.wait)
    connection = pooled(args.supplier, args.wait)
    wait_for_parent("ready", work=claim.id, generation=claim.generation,
                    operation_key=operation_key, expires=claim.expires)
    answer = post_pooled(connection, operation_key, claim, proposal)
    if answer is None:
        orders.record(conn, operation_key, orders.UNKNOWN)
    elif answer[0] in (200, 201):
        orders.record(conn, operation_key, orders.CONFIRMED, answer[1]["receipt"])
    return {"work": claim.id, "generation": claim.generation,
            "supplier": None if answer is None else answer[0],
            "late": late_writes(conn, claim, fenced=not args.no_fence)}


def restock(conn, claim: claims.Claim, url: str, wait_s: float) -> str:
    """Carry one claimed piece of work to its end from what is recorded: a
    new one is proposed and signed off; an order that may have gone out is
    looked up before it is sent again (chapter 06). Its final status."""
    order = orders.order_for(conn, claim.id)
    if order is None:
        operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
        orders.sign_off(conn, operation_key)
        status = orders.SIGNED_OFF
    else:
        operation_key, status = order["operation_key"], order["status"]
    if status in orders.UNCERTAIN:
        status = orders.lookup(conn, operation_key, url, claim, wait_s)
    if status in (orders.SIGNED_OFF, orders.NOT_FOUND):
        status = orders.send(conn, claim, operation_key, url, wait_s)
    final = FINAL.get(status, claims.BLOCKED)  # still UNKNOWN: try again later
    fence.observe(conn, claim, {"kind": "outcome", "order": status})
    fence.finish(conn, claim, final, status)
    return final


def open_work(conn) -> int:
    """How many pieces of work are queued or held (by anyone, anywhere)."""
    return conn.execute("SELECT count(*) FROM work WHERE status IN"
                        f" {sql_list(claims.OPEN)}").fetchone()[0]


def backend_of(conn) -> int | None:
    """The server process serving ``conn`` (None for a SQLite file): the
    parent finds this worker's connection on the server by it."""
    asked = store.dialect(conn).server_process  # a file's backend has none
    if not asked:
        return None
    return conn.execute(asked).fetchone()["pid"]


def work(conn, args) -> dict:
    """The ``work`` mode above; how many pieces this worker finished."""
    if args.start_on_go:
        wait_for_parent("ready")
    finished, deadline = [], time.monotonic() + args.patience
    backend, current, holding = backend_of(conn), [None], []

    def held(name: str) -> None:  # the first order answered, not yet recorded
        if name != "before_receipt" or finished:
            return
        if args.hold_mid_write:  # the row stays locked while we wait
            with fence.fenced(conn, current[0], "observe"):
                holding.append(current[0].id)
                wait_for_parent("writing", backend=backend)
        elif args.hold_after_send:
            holding.append(current[0].id)
            wait_for_parent("sent", backend=backend, expires=current[0].expires)

    def take() -> claims.Claim | None:
        if args.work is not None:  # this piece alone, whatever else is open
            return claims.claim(conn, args.owner, ttl=args.ttl, work_id=args.work)
        return (orders.claim_recovery(conn, args.owner, ttl=args.ttl)
                or claims.claim(conn, args.owner, ttl=args.ttl))

    with observing(held):
        while True:
            claim = current[0] = take()
            if claim is not None:
                finished.append((claim.id, restock(conn, claim, args.supplier,
                                                   args.wait)))
                if args.work is not None:
                    break
            elif not open_work(conn) or time.monotonic() > deadline:
                break
            else:
                time.sleep(0.05)  # a lease held elsewhere has not run out yet
    if (args.hold_mid_write or args.hold_after_send) and not holding:
        raise NeverHeld(finished, conn, args)
    return {"finished": finished}


class NeverHeld(Exception):
    """A worker told to hold ended without reaching its hold: what it did
    and what it saw, so the trial that waited for it can say why."""

    def __init__(self, finished: list, conn, args) -> None:
        first = store.dialect(conn).insertion_order
        rows = [dict(row) for row in conn.execute(
            "SELECT id, status, owner, generation, expires FROM work"
            f" ORDER BY {first}")]
        super().__init__(
            f"{args.owner} never reached its hold: finished {finished}"
            f" (--work {args.work}); the work at its end, by the server's clock"
            f" {store.now(conn):.3f}: {rows}")


def drain(conn, args) -> dict:
    """The ``drain`` mode above; how many turns this worker finished, and how
    many of its finishes the fence refused (none, unless ``--read-first``)."""
    take = claim_read_first if args.read_first else claims.claim
    wait_for_parent("ready")
    finished = stale = 0
    while claim := patiently(lambda: take(conn, args.owner, ttl=args.ttl)):
        if finished + stale == 0:  # every racer in the race before any drains
            wait_for_parent("claimed", work=claim.id, generation=claim.generation)
        try:
            patiently(lambda: fence.finish(conn, claim, claims.DONE, args.owner))
            finished += 1
        except fence.StaleClaim:  # the mutant's turn, taken again by another
            stale += 1
    return {"finished": finished, "stale": stale}


def parse(argv: list[str] | None):
    """The command line above; a bad one is one line and exit 2."""
    parser = argument_parser(__doc__.split("\n\n")[0],
                             epilog=__doc__.split("\n\n")[-1].strip())
    parser.add_argument("mode", choices=tuple(MODES))
    parser.add_argument("--store", required=True, help="the shared store's address")
    parser.add_argument("--supplier", default="", help="supplier URL from here")
    parser.add_argument("--owner", default="host-worker")
    parser.add_argument("--ttl", type=seconds, default=1.0, help="lease seconds")
    parser.add_argument("--wait", type=seconds, default=0.5, help="request timeout")
    parser.add_argument("--patience", type=seconds, default=30.0,
                        help="seconds to wait for leases held elsewhere")
    held = parser.add_mutually_exclusive_group()
    held.add_argument("--hold-after-send", action="store_true")
    held.add_argument("--hold-mid-write", action="store_true")
    parser.add_argument("--work", default=None, metavar="ID",
                        help="work mode: take this piece and no other")
    parser.add_argument("--start-on-go", action="store_true")
    parser.add_argument("--no-fence", action="store_true", help="the mutant")
    parser.add_argument("--read-first", action="store_true",
                        help="drain with the mutant claim (default: off)")
    return parser.parse_args(argv)


@one_line_errors(held=HELD)
def main(argv: list[str] | None = None) -> int:
    """Run one mode against the shared store; print its report (chapter 10)."""
    args = parse(argv)
    try:
        claims.check_lease(args.owner, args.ttl)
        if not (0 < args.wait < args.ttl and 0 < args.patience <= 600):
            raise ValueError("need 0 < --wait < --ttl and 0 < --patience <= 600")
        if args.mode != "drain":
            check_text("--supplier", args.supplier)
        check_text("--work", args.work, none_ok=True)
        hold_seconds()  # CRASHCOURSE_HOLD_SECONDS, if set, is seconds above 0
        check_installed((args.store, TABLES))
    except (TypeError, ValueError, StoreMissing) as bad:
        return refuse(bad)
    with opened(args.store) as conn:
        try:
            report = MODES[args.mode](conn, args)
        except NothingToClaim as nothing:
            print(nothing, file=sys.stderr)
            return NOTHING_TO_CLAIM
        except NeverHeld as never:
            print(never, file=sys.stderr)
            return NEVER_HELD
    say("report", **report)
    return 0


MODES = {"hold": hold, "drain": drain, "work": work}

if __name__ == "__main__":
    sys.exit(main())
