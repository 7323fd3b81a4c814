"""Supplier orders on the agent side (chapter 06).

An order moves DRAFT -> APPROVED -> SENDING -> CONFIRMED / REJECTED / UNKNOWN
(REVOKED when the work is cancelled before it went out). Its id is an
operation key derived from the work and the proposal, so a replacement sends
the SAME id, never a new one.

* ``admit`` is the fenced write that lets a request out: current holder only,
  and only if the declared wait fits in what is left of the lease. It records
  SENDING before a byte leaves.
* A lost or timed-out response leaves UNKNOWN; ``lookup`` asks the supplier.
  A resend from SENDING/UNKNOWN is admitted only after THIS holding looked it up.
* Every request carries the fencing token (work id, generation), so the
  supplier itself can refuse a stale holder's delayed request.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass

from crashcourse import fence
from crashcourse.boundary import boundary
from crashcourse.claims import Claim, check_text, clock
from crashcourse.effects import operation_key
from crashcourse.store import ensure_schema, immediate

SCHEMA = """
CREATE TABLE IF NOT EXISTS orders (
    op_id        TEXT PRIMARY KEY,
    work_id      TEXT NOT NULL REFERENCES work (id),
    sku          TEXT NOT NULL,
    quantity     INTEGER NOT NULL CHECK (quantity > 0),
    unit_cents   INTEGER NOT NULL CHECK (unit_cents > 0),
    status       TEXT NOT NULL CHECK (status IN ('DRAFT', 'APPROVED', 'SENDING',
                 'CONFIRMED', 'REJECTED', 'UNKNOWN', 'REVOKED')),
    receipt      TEXT,
    sent_generation    INTEGER,   -- the holding that let the last request out
    checked_generation INTEGER    -- the holding that last looked it up
)
"""
UNCERTAIN = ("SENDING", "UNKNOWN")


class ResponseLost(ConnectionError):
    """The request may or may not have reached the supplier (chapter 06)."""


class StaleAtSupplier(PermissionError):
    """The supplier refused our generation: a newer holder got there first."""


class LeaseTooShort(PermissionError):
    """The declared wait would outlive the lease: the request is not admitted."""


class OrderConflict(ValueError):
    """The supplier holds this operation id with another proposal."""


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


class ScriptedModel:
    """A stand-in reasoning model that always proposes the same order."""

    def __init__(self, proposal: Proposal):
        self.proposal, self.calls = proposal, 0

    def propose(self, prompt: str) -> Proposal:
        self.calls += 1
        return self.proposal


class NoNewReasoning:
    """A model that fails if called: recovery must continue from records."""

    def propose(self, prompt: str) -> Proposal:
        raise AssertionError("recovery asked the model for a new proposal")


def install(conn: sqlite3.Connection) -> None:
    """Claims, fence and the agent's orders table (chapter 06)."""
    fence.install(conn)
    ensure_schema(conn, SCHEMA)


def order_for(conn: sqlite3.Connection, work_id: str) -> dict | None:
    """The (single) order a piece of work has, or None (chapter 06)."""
    row = conn.execute(
        "SELECT * FROM orders WHERE work_id = :id ORDER BY rowid LIMIT 1",
        {"id": work_id},
    ).fetchone()
    return dict(row) if row else None


def propose(conn: sqlite3.Connection, held: Claim, model) -> str:
    """Ask the model once, store its proposal as a DRAFT (fenced); the op id.

    Introduced in chapter 06."""
    proposal = model.propose(held.prompt)
    op_id = operation_key(held.id, 1, "supplier_order", asdict(proposal))
    with fence.fenced(conn, held, "propose"):
        conn.execute(
            "INSERT INTO orders (op_id, work_id, sku, quantity, unit_cents, status)"
            " VALUES (:op_id, :work_id, :sku, :quantity, :unit_cents, 'DRAFT')",
            {"op_id": op_id, "work_id": held.id, **asdict(proposal)},
        )
        conn.execute(
            "INSERT INTO transcript (work_id, generation, message)"
            " VALUES (:id, :generation, :message)",
            {"id": held.id, "generation": held.generation, "message": json.dumps(
                {"kind": "proposal", "op_id": op_id, **asdict(proposal)},
                sort_keys=True)},
        )
    return op_id


def approve(conn: sqlite3.Connection, op_id: str) -> None:
    """The operator approves a DRAFT; BLOCKED work waiting for it becomes READY.

    Introduced in chapter 06."""
    with immediate(conn):
        changed = conn.execute(
            "UPDATE orders SET status = 'APPROVED'"
            " WHERE op_id = :op_id AND status = 'DRAFT'", {"op_id": op_id}).rowcount
        if not changed:
            raise ValueError(f"no DRAFT order {op_id!r} to approve")
        conn.execute(
            "UPDATE work SET status = 'READY', available_after = 0"
            " WHERE status = 'BLOCKED'"
            " AND id = (SELECT work_id FROM orders WHERE op_id = :op_id)",
            {"op_id": op_id})


def admit(conn: sqlite3.Connection, held: Claim, op_id: str, wait_s: float,
          now: float | None = None) -> Proposal:
    """Let one request out: fenced, lease long enough, SENDING first (ch. 06)."""
    with fence.fenced(conn, held, "send", now):
        row = conn.execute("SELECT * FROM orders WHERE op_id = :op_id AND"
                           " work_id = :work_id", {"op_id": op_id, "work_id": held.id}
                           ).fetchone()
        if row is None:
            raise KeyError(f"work {held.id} has no order {op_id!r}")
        resend = row["status"] in UNCERTAIN
        if resend and row["checked_generation"] != held.generation:
            raise PermissionError("look the operation up before sending it again")
        if row["status"] != "APPROVED" and not resend:
            raise PermissionError(f"order is {row['status']}, not APPROVED")
        if not 0 < wait_s < held.expires - clock(now):
            raise LeaseTooShort(f"a {wait_s} s wait does not fit in the lease")
        conn.execute("UPDATE orders SET status = 'SENDING',"
                     " sent_generation = :generation WHERE op_id = :op_id",
                     {"generation": held.generation, "op_id": op_id})
    return Proposal(row["sku"], row["quantity"], row["unit_cents"])


def call(request: urllib.request.Request, wait_s: float) -> tuple[int, dict]:
    """One HTTP exchange: (status, JSON body); a lost answer is ``ResponseLost``.

    Introduced in chapter 06."""
    try:
        with urllib.request.urlopen(request, timeout=wait_s) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"{}")
    except (OSError, ValueError) as lost:  # reset, timeout, closed, garbled
        raise ResponseLost(f"no answer from the supplier: {lost!r}") from None


def post(url: str, op_id: str, held: Claim, proposal: Proposal, wait_s: float):
    """POST the order with its idempotency key and fencing token (chapter 06)."""
    request = urllib.request.Request(
        f"{url}/orders", method="POST", data=json.dumps(asdict(proposal)).encode(),
        headers={"Content-Type": "application/json", "Idempotency-Key": op_id,
                 "X-Work-Id": held.id, "X-Generation": str(held.generation)})
    return call(request, wait_s)


def record(conn: sqlite3.Connection, op_id: str, status: str, receipt=None) -> None:
    """Record what the supplier said; only an uncertain order can change.

    Introduced in chapter 06."""
    with immediate(conn):
        conn.execute(
            "UPDATE orders SET status = :status, receipt = :receipt"
            " WHERE op_id = :op_id AND status IN ('SENDING', 'UNKNOWN')",
            {"status": status, "receipt": receipt, "op_id": op_id})


def send(conn: sqlite3.Connection, held: Claim, op_id: str, url: str,
         wait_s: float = 2.0) -> str:
    """Admit, POST, record the answer; returns the order's new status (ch. 06)."""
    proposal = admit(conn, held, op_id, wait_s)
    boundary("after_sending_recorded")
    try:
        status, body = post(url, op_id, held, proposal, wait_s)
    except ResponseLost:
        record(conn, op_id, "UNKNOWN")
        return "UNKNOWN"
    boundary("before_receipt")
    if status == 412:
        raise StaleAtSupplier(f"supplier holds generation {body.get('highest')}")
    if status == 409:
        raise OrderConflict(f"supplier holds {op_id!r} with another proposal")
    outcome = "CONFIRMED" if status in (200, 201) else "REJECTED"
    record(conn, op_id, outcome, body.get("receipt"))
    return outcome


def lookup(conn: sqlite3.Connection, op_id: str, url: str,
           held: Claim | None = None, wait_s: float = 2.0) -> str:
    """Ask the supplier whether ``op_id`` exists; record a receipt if it does.

    Introduced in chapter 06."""
    status, body = call(urllib.request.Request(f"{url}/orders/{op_id}"), wait_s)
    if status == 200:
        record(conn, op_id, "CONFIRMED", body["receipt"])
        return "CONFIRMED"
    if status != 404:
        raise ResponseLost(f"lookup answered {status}")
    if held is not None:
        with fence.fenced(conn, held, "lookup"):
            conn.execute("UPDATE orders SET checked_generation = :generation"
                         " WHERE op_id = :op_id",
                         {"generation": held.generation, "op_id": op_id})
    return "NOT_FOUND"


def revoke_unsent(conn: sqlite3.Connection, work_id: str) -> int:
    """Inside an open transaction: DRAFT and APPROVED orders can no longer go out.

    Introduced in chapter 06."""
    return conn.execute(
        "UPDATE orders SET status = 'REVOKED' WHERE work_id = :id"
        " AND status IN ('DRAFT', 'APPROVED')", {"id": work_id}).rowcount
