"""Supplier orders on the agent side (chapter 06).

An order moves DRAFT -> SIGNED_OFF -> SENDING -> CONFIRMED / REJECTED / UNKNOWN
(REVOKED: it can no longer take effect: the work was cancelled before the
order went out, or ``settle_cancelled`` fenced the supplier and found no
such order there). Its operation key is
derived from the work and the proposal: a replacement sends the SAME key.

* ``admit`` is the fenced write that lets a request out: current holder only,
  and only if the declared wait fits in what is left of the lease. It records
  SENDING before a byte leaves.
* A lost or timed-out response leaves UNKNOWN; ``lookup`` asks the supplier.
  So does an answer that decided nothing (503, a 409 for a key in flight).
  A resend from SENDING/UNKNOWN is admitted only after THIS claim looked it up.
* Every request carries the fencing token (work id, generation), so the
  supplier itself can refuse a stale holder's delayed request.
* A cancel reaches the supplier through ``settle_cancelled``: it raises the
  work's fence there to the cancel's generation, and only then looks the
  uncertain orders up, so a NOT_FOUND it hears is final (REVOKED).
  ``settle_all_cancelled`` does it for every cancelled work still uncertain.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass

from crashcourse import claims, effects, store
from crashcourse.boundary import boundary
from crashcourse.claims import BLOCKED, READY, RUNNING, Claim, fence
from crashcourse.effects import FencingToken
from crashcourse.services import supplier as supplier_client
from crashcourse.store import check_backend, ensure_schema, immediate, sql_list
from crashcourse.store.dialect import POSTGRES, SQLITE
from crashcourse.validate import check_text

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["RUNS_ON", "STATUSES", "UNCERTAIN", "UNSENT", "NOT_FOUND", "SCHEMA",
    "UNCERTAIN_WORK", "RECOVERY", "ResponseLost", "StaleAtSupplier",
    "LeaseTooShort", "OrderConflict", "Proposal", "install", "claim_recovery",
    "order_for", "propose", "sign_off", "admit", "answered", "post", "record",
    "send", "lookup", "revoke_unsent", "settle_cancelled", "settle_all_cancelled",
    "order_status"]

# The databases install() accepts (store.check_backend): a store on any other
# is refused before anything is written.
RUNS_ON = (SQLITE, POSTGRES)

DRAFT, SIGNED_OFF, SENDING = "DRAFT", "SIGNED_OFF", "SENDING"
CONFIRMED, REJECTED, UNKNOWN, REVOKED = "CONFIRMED", "REJECTED", "UNKNOWN", "REVOKED"
STATUSES = (DRAFT, SIGNED_OFF, SENDING, CONFIRMED, REJECTED, UNKNOWN, REVOKED)
UNCERTAIN = (SENDING, UNKNOWN)  # a request may have reached the supplier
UNSENT = (DRAFT, SIGNED_OFF)  # no request has left yet
NOT_FOUND = "NOT_FOUND"  # what ``lookup`` says when the supplier has no such key
# A status goes into a query's text from these constants; values are parameters.

# A PostgreSQL store (chapter 10) has no rowid: which order was written first
# is a column there, {insertion_column} (crashcourse.store.dialect).
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS orders ({{insertion_column}}
    operation_key TEXT PRIMARY KEY,
    work_id       TEXT NOT NULL REFERENCES work (id),
    sku           TEXT NOT NULL,
    quantity      INTEGER NOT NULL CHECK (quantity > 0),
    unit_cents    INTEGER NOT NULL CHECK (unit_cents > 0),
    status        TEXT NOT NULL CHECK (status IN {sql_list(STATUSES)}),
    receipt       TEXT,
    sent_generation    INTEGER,   -- the claim that let the last request out
    checked_generation INTEGER    -- the claim that last looked it up
);
CREATE INDEX IF NOT EXISTS orders_by_status ON orders (status, work_id)  -- recovery
"""
# ``claim_recovery``'s rule, and where it looks: work whose order may have gone out.
UNCERTAIN_WORK = f"SELECT work_id FROM orders WHERE status IN {sql_list(UNCERTAIN)}"
RECOVERY = f"""-- eligible: an order whose fate is uncertain, and no live holder
    AND (item.status IN {sql_list((READY, BLOCKED))}  -- a cancel is not permission
         OR (item.status = '{RUNNING}' AND item.expires <= :now))
    AND item.id IN ({UNCERTAIN_WORK})"""


class ResponseLost(ConnectionError):
    """The request may or may not have reached the supplier (chapter 06)."""


class StaleAtSupplier(PermissionError):
    """The supplier refused our generation: a newer holder got there first."""


class LeaseTooShort(PermissionError):
    """The declared wait would outlive the lease: the request is not admitted."""


class OrderConflict(ValueError):
    """The supplier holds this operation key with another proposal (422)."""


@dataclass(frozen=True)
class Proposal:
    """What to buy: a stock-keeping unit, how many, at what unit price."""

    sku: str
    quantity: int
    unit_cents: int

    def __post_init__(self):
        check_text("sku", self.sku)
        for name in ("quantity", "unit_cents"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")


def install(conn: sqlite3.Connection) -> None:
    """Claims, fence and the agent's orders table (chapter 06)."""
    check_backend(conn, RUNS_ON, __name__)
    fence.install(conn)
    column = store.dialect(conn).insertion_column
    ensure_schema(conn, SCHEMA.format(insertion_column=column and f"\n    {column},"))


def claim_recovery(conn: sqlite3.Connection, owner: str, *, ttl: float,
                   now: float | None = None) -> Claim | None:
    """Claim work whose order may have gone out (``RECOVERY``) (chapter 06)."""
    return claims.claim(conn, owner, ttl=ttl, now=now, eligible=RECOVERY,
                        among=UNCERTAIN_WORK)


def order_for(conn: sqlite3.Connection, work_id: str) -> dict | None:
    """The (single) order a piece of work has, or None (chapter 06)."""
    first = store.dialect(conn).insertion_order  # the one written first
    row = conn.execute(f"SELECT * FROM orders WHERE work_id = :id ORDER BY {first}"
                       " LIMIT 1", {"id": work_id}).fetchone()
    return dict(row) if row else None


def propose(conn: sqlite3.Connection, claim: Claim, model) -> str:
    """Ask the model once, store a DRAFT (fenced); its operation key (chapter 06)."""
    proposal = asdict(model.propose(claim.prompt))
    operation_key = effects.operation_key(claim.id, 1, "supplier_order", proposal)
    with fence.fenced(conn, claim, "propose"):
        conn.execute(
            "INSERT INTO orders (operation_key, work_id, sku, quantity, unit_cents,"
            " status) VALUES (:operation_key, :work_id, :sku, :quantity, :unit_cents,"
            f" '{DRAFT}')",
            {"operation_key": operation_key, "work_id": claim.id, **proposal},
        )
        conn.execute(
            "INSERT INTO transcript (work_id, generation, message)"
            " VALUES (:id, :generation, :message)",
            {"id": claim.id, "generation": claim.generation, "message": json.dumps(
                {"kind": "proposal", "operation_key": operation_key, **proposal},
                sort_keys=True)},
        )
    return operation_key


def sign_off(conn: sqlite3.Connection, operation_key: str) -> None:
    """The operator signs off a DRAFT; BLOCKED work on it is READY (chapter 06)."""
    with immediate(conn):
        changed = conn.execute(
            f"UPDATE orders SET status = '{SIGNED_OFF}'"
            f" WHERE operation_key = :operation_key AND status = '{DRAFT}'",
            {"operation_key": operation_key}).rowcount
        if not changed:
            raise ValueError(f"no DRAFT order {operation_key!r} to sign off")
        conn.execute(
            f"UPDATE work SET status = '{READY}', available_after = 0"
            f" WHERE status = '{BLOCKED}' AND id = (SELECT work_id FROM orders"
            "   WHERE operation_key = :operation_key)",
            {"operation_key": operation_key})


def admit(conn: sqlite3.Connection, claim: Claim, operation_key: str,
          wait_s: float, now: float | None = None) -> Proposal:
    """Let one request out: fenced, lease long enough, SENDING first (chapter 06)."""
    with fence.fenced(conn, claim, "send", now):
        row = conn.execute(
            "SELECT * FROM orders"
            " WHERE operation_key = :operation_key AND work_id = :work_id",
            {"operation_key": operation_key, "work_id": claim.id}).fetchone()
        if row is None:
            raise KeyError(f"work {claim.id} has no order {operation_key!r}")
        resend = row["status"] in UNCERTAIN
        if resend and row["checked_generation"] != claim.generation:
            raise PermissionError("look the operation up before sending it again")
        if row["status"] != SIGNED_OFF and not resend:
            raise PermissionError(f"order is {row['status']}, not {SIGNED_OFF}")
        if not 0 < wait_s < claim.expires - store.now(conn, now):  # lease's clock
            raise LeaseTooShort(f"a {wait_s} s wait does not fit in the lease")
        conn.execute(f"UPDATE orders SET status = '{SENDING}', sent_generation"
                     " = :generation WHERE operation_key = :operation_key",
                     {"generation": claim.generation, "operation_key": operation_key})
    return Proposal(row["sku"], row["quantity"], row["unit_cents"])


def answered(exchange, *args, **options) -> tuple[int, dict]:
    """Run one ``supplier`` exchange; a lost, garbled or undecided
    answer (``NotDecided``: 503, 409 in flight) becomes ``ResponseLost``: it
    may or may not have reached the supplier, never a refusal (chapter 06)."""
    try:
        return exchange(*args, **options)
    except (OSError, ValueError) as lost:  # reset, timeout, garbled, NotDecided
        raise ResponseLost(f"no decision from the supplier: {lost!r}") from None


def post(url: str, operation_key: str, claim: Claim, proposal: Proposal,
         wait_s: float):
    """POST the order with its operation key and fencing token (chapter 06)."""
    return answered(supplier_client.place_order, url, operation_key,
                    asdict(proposal), token=claim.token, wait_s=wait_s)


def record(conn: sqlite3.Connection, operation_key: str, status: str,
           receipt=None) -> None:
    """Record what the supplier said; only an uncertain order changes (chapter 06)."""
    with immediate(conn):
        conn.execute(
            "UPDATE orders SET status = :status, receipt = :receipt"
            " WHERE operation_key = :operation_key"
            f" AND status IN {sql_list(UNCERTAIN)}",
            {"status": status, "receipt": receipt, "operation_key": operation_key})


def send(conn: sqlite3.Connection, claim: Claim, operation_key: str, url: str,
         wait_s: float = 2.0) -> str:
    """Admit, POST, record the answer; the order's new status (chapter 06)."""
    proposal = admit(conn, claim, operation_key, wait_s)
    boundary("after_sending_recorded")
    try:
        status, body = post(url, operation_key, claim, proposal, wait_s)
    except ResponseLost:
        record(conn, operation_key, UNKNOWN)
        return UNKNOWN
    boundary("before_receipt")
    if status == 412:
        raise StaleAtSupplier(f"supplier holds generation {body.get('highest')}")
    if status == 422:  # the IETF Idempotency-Key draft's "same key, other body"
        raise OrderConflict(f"supplier holds {operation_key!r} with another proposal")
    outcome = CONFIRMED if status in (200, 201) else REJECTED
    record(conn, operation_key, outcome, body.get("receipt"))
    return outcome


def lookup(conn: sqlite3.Connection, operation_key: str, url: str,
           claim: Claim | None = None, wait_s: float = 2.0) -> str:
    """Ask the supplier for ``operation_key``; keep its receipt if any (chapter 06)."""
    status, body = answered(supplier_client.get_order, url, operation_key, wait_s)
    if status == 200:
        record(conn, operation_key, CONFIRMED, body["receipt"])
        return CONFIRMED
    if status != 404:
        raise ResponseLost(f"lookup answered {status}")
    if claim is not None:
        with fence.fenced(conn, claim, "lookup"):
            conn.execute("UPDATE orders SET checked_generation = :generation"
                         " WHERE operation_key = :operation_key",
                         {"generation": claim.generation,
                          "operation_key": operation_key})
    return NOT_FOUND


def revoke_unsent(conn: sqlite3.Connection, work_id: str) -> int:
    """In an open transaction: unsent orders can no longer go out (chapter 06)."""
    return conn.execute(
        f"UPDATE orders SET status = '{REVOKED}'"
        f" WHERE work_id = :id AND status IN {sql_list(UNSENT)}",
        {"id": work_id}).rowcount


def settle_cancelled(conn: sqlite3.Connection, work_id: str, url: str,
                     wait_s: float = 2.0) -> dict[str, str]:
    """Settle the uncertain orders of CANCELLED work; {operation_key: status}
    (chapter 06, issue 29).

    First the cancel reaches the supplier: its fence for ``work_id`` is
    raised to the work's generation (the cancel's, which no claim holds).
    Then each order still SENDING or UNKNOWN is looked up: a receipt is
    CONFIRMED (the request was decided before the fence: the cancel came too
    late for it); NOT_FOUND is REVOKED, and that is final: from the fence's
    commit on the supplier refuses every request of an earlier generation,
    so an old holder paused anywhere, its POST still to come, can never
    place it. A NOT_FOUND heard WITHOUT that fence proves nothing (the POST
    may be on its way), which is why the fence comes first.

    If the fence is not confirmed (the supplier down, an answer lost) or a
    lookup decides nothing, the orders stay uncertain (``ResponseLost``) and
    a later call settles them; nothing is ever sent again. Work that is not
    CANCELLED is refused (ValueError) before anything is asked."""
    row = claims.work_row(conn, work_id)  # KeyError: no such work
    if row["status"] != claims.CANCELLED:
        raise ValueError(f"work {work_id!r} is not cancelled: nothing to settle")
    try:
        supplier_client.fence_work(url, FencingToken(work_id, row["generation"]),
                                   wait_s)
    except (OSError, ValueError) as unconfirmed:
        raise ResponseLost(f"the supplier's fence is not confirmed:"
                           f" {unconfirmed!r}") from None
    uncertain = conn.execute(
        "SELECT operation_key FROM orders WHERE work_id = :id"
        f" AND status IN {sql_list(UNCERTAIN)}", {"id": work_id}).fetchall()
    settled = {}
    for (operation_key,) in uncertain:
        found = lookup(conn, operation_key, url, wait_s=wait_s)
        if found == NOT_FOUND:  # fenced first: it can never be placed now
            record(conn, operation_key, REVOKED)
        settled[operation_key] = order_status(conn, operation_key)
    return settled


def settle_all_cancelled(conn: sqlite3.Connection, url: str,
                         wait_s: float = 2.0) -> dict[str, dict[str, str]]:
    """``settle_cancelled`` for every CANCELLED work with an uncertain
    order, which ``claim_recovery`` never claims (a cancel is not
    permission); {work_id: settled}. Work whose supplier does not answer is
    left out and stays uncertain for the next call (chapter 06, issue 29)."""
    cancelled = conn.execute(
        f"SELECT id FROM work WHERE status = '{claims.CANCELLED}'"
        f" AND id IN ({UNCERTAIN_WORK}) ORDER BY id").fetchall()
    settled = {}
    for (work_id,) in cancelled:
        try:
            settled[work_id] = settle_cancelled(conn, work_id, url, wait_s)
        except ResponseLost:
            continue  # still uncertain: the next call asks again
    return settled


def order_status(conn: sqlite3.Connection, operation_key: str) -> str:
    """The stored status of one order (chapter 06)."""
    return conn.execute("SELECT status FROM orders WHERE operation_key = :key",
                        {"key": operation_key}).fetchone()[0]
