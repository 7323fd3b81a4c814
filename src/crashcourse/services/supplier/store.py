"""The supplier's own store and how it decides each request (chapters 06, 08).

Every decision is made inside one ``BEGIN IMMEDIATE`` transaction of the
supplier's own SQLite file, and every request it decided is logged in
``requests`` (method, operation key, fencing token, the answer given), so a
grader counts remote calls from the supplier's rows, never from a caller. A
request refused before any decision is logged too when it names a usable key
(``log_refusal``); only a store that cannot be written keeps no row.

* ``accept`` (``POST /orders``, chapter 06): a new order, or a replay of it,
  raises the work's fence; a generation below the fence is refused; the same
  key with another proposal is 422 (the IETF Idempotency-Key draft's answer).
* ``release`` (``POST /orders/{key}/release``, chapter 08): a compensation
  with its OWN operation key, recorded in ``releases``. The same release key
  for the same order replays its answer; the order is released at most once.
* ``lookup`` (``GET /orders/{key}``): the stored order or None, logged.
* ``fence_work`` (``POST /work/{id}/fence``, chapters 06, 08): a cancel
  reaching the supplier. It raises the work's fence to the cancel's
  generation, in one transaction, and is logged with method ``FENCE`` (so a
  count of order POSTs never includes it). From that commit on every order
  or release of a lower generation is refused (412), because ``accept`` and
  ``release`` read the fence inside their own transactions: a request
  decided before the commit was placed (and a lookup made after it finds
  it), one decided after it never is. Raising it again is harmless (max).

The HTTP side is ``crashcourse.services.supplier.server``, which reads a request
with ``crashcourse.services.supplier.request``; callers use
``crashcourse.services.supplier``.
"""

from __future__ import annotations

import json
import time

from crashcourse.store import ensure_schema, immediate, opened
from crashcourse.validate import canonical

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:
    from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS orders (
    operation_key TEXT PRIMARY KEY,   -- the caller's idempotency key
    work_id       TEXT NOT NULL,
    proposal      TEXT NOT NULL,      -- canonical JSON of sku, quantity, price
    generation    INTEGER NOT NULL,   -- the token it was accepted under
    receipt       TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS fences (
    work_id    TEXT PRIMARY KEY,
    generation INTEGER NOT NULL       -- highest generation accepted so far
);
CREATE TABLE IF NOT EXISTS requests (
    seq           INTEGER PRIMARY KEY,
    method        TEXT NOT NULL,
    operation_key TEXT NOT NULL,
    work_id       TEXT,
    generation    INTEGER,
    answer        INTEGER NOT NULL,   -- the HTTP status it was given
    at            REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS releases (
    operation_key TEXT PRIMARY KEY,   -- the release's own idempotency key
    order_key     TEXT NOT NULL UNIQUE REFERENCES orders (operation_key),
    work_id       TEXT NOT NULL,
    generation    INTEGER NOT NULL,   -- the token it was accepted under
    at            REAL NOT NULL
)
"""
TABLES = ("orders", "fences", "requests", "releases")  # what an installed file has


def install(path: str | Path) -> None:
    """Create the supplier's tables in its own file (chapter 06).

    The file is the supplier's OWN store (``store.connect(own=)``, issue 35):
    made only where no file is; a 0-byte file (a store that vanished: an
    empty new one would turn every replayed key into a new order) or another
    service's database is refused with ``StoreMissing``, nothing written."""
    with opened(path, record=True, own=TABLES) as conn:
        ensure_schema(conn, SCHEMA)


def accept(conn, operation_key: str, work: str, generation: int, proposal: dict,
           fence=True, reject=False):
    """Decide one POST in one transaction: (status, answer body) (chapter 06).

    ``fence=False`` is the mutant; ``reject`` the fault switch (403)."""
    with immediate(conn):
        highest = fence_of(conn, work)
        if reject:
            status, body = 403, {"error": "rejected"}
        elif fence and highest is not None and generation < highest:
            status, body = 412, {"error": "stale_generation", "highest": highest}
        else:
            status, body = place(conn, operation_key, work, generation, proposal)
        log_request(conn, "POST", operation_key, work, generation, status)
    return status, body


def place(conn, operation_key: str, work: str, generation: int, proposal: dict):
    """Conflict, replay, or a new order; a replay or a new order raises this
    work's fence, so a newer holder's replay also shuts the older out (ch. 06)."""
    row = find_order(conn, operation_key)
    if row is not None and (row["proposal"] != canonical(proposal)
                            or row["work_id"] != work):  # one key, one request
        return 422, {"error": "conflict", "operation_key": operation_key}
    if row is None:
        serial = conn.execute("SELECT count(*) FROM orders").fetchone()[0] + 1
        conn.execute(
            "INSERT INTO orders (operation_key, work_id, proposal, generation,"
            " receipt) VALUES (:operation_key, :work, :proposal, :generation,"
            " :receipt)",
            {"operation_key": operation_key, "work": work, "generation": generation,
             "proposal": canonical(proposal), "receipt": f"R-{serial:05d}"})
    raise_fence(conn, work, generation)
    return 201 if row is None else 200, order_body(find_order(conn, operation_key))


def release(conn, operation_key: str, order_key: str, work: str,
            generation: int) -> tuple[int, dict]:
    """Decide one release in one transaction: (status, answer body) (chapter 08).

    201 released now; 200 the same release key for the same order (a replay);
    404 no such order; 422 the key names another release; 409 the order
    belongs to other work or was released under another key; 412 a generation
    below the work's fence. A release, or its replay, raises the fence."""
    with immediate(conn):
        status, body = decide_release(conn, operation_key, order_key, work,
                                      generation)
        log_request(conn, "POST", operation_key, work, generation, status)
    return status, body


def decide_release(conn, operation_key, order_key, work, generation):
    """``release``'s rules in order: fence, order, replay, conflict (ch. 08)."""
    highest, order = fence_of(conn, work), find_order(conn, order_key)
    if highest is not None and generation < highest:
        return 412, {"error": "stale_generation", "highest": highest}
    if order is None:
        return 404, {"error": "not_found", "operation_key": order_key}
    done = conn.execute(
        "SELECT * FROM releases WHERE operation_key = :key OR order_key = :order",
        {"key": operation_key, "order": order_key}).fetchone()
    if done is not None and done["operation_key"] == operation_key:
        if done["order_key"] != order_key:  # one key, another request: the draft's 422
            return 422, {"error": "conflict", "operation_key": operation_key}
        raise_fence(conn, work, generation)
        return 200, release_body(done)
    if done is not None or order["work_id"] != work:
        return 409, {"error": "conflict", "operation_key": operation_key}
    conn.execute(
        "INSERT INTO releases (operation_key, order_key, work_id, generation, at)"
        " VALUES (:key, :order, :work, :generation, :at)",
        {"key": operation_key, "order": order_key, "work": work,
         "generation": generation, "at": time.time()})
    raise_fence(conn, work, generation)
    return 201, release_body(conn.execute(
        "SELECT * FROM releases WHERE operation_key = :key",
        {"key": operation_key}).fetchone())


def fence_work(conn, work: str, generation: int) -> int:
    """Raise ``work``'s fence to at least ``generation`` in one transaction,
    logged; the fence now (chapters 06, 08).

    What it guarantees: once this commits, no order and no release of
    ``work`` with a generation below ``generation`` is ever accepted here,
    and no later request lowers the fence. It says nothing about requests
    decided before the commit: those are orders a lookup finds."""
    with immediate(conn):
        raise_fence(conn, work, generation)
        log_request(conn, "FENCE", f"fence:{work}", work, generation, 200)
        return fence_of(conn, work)


def lookup(conn, operation_key: str):
    """GET: the order stored under ``operation_key`` or None, logged (ch. 06)."""
    with immediate(conn):
        row = find_order(conn, operation_key)
        log_request(conn, "GET", operation_key, None, None, 200 if row else 404)
    return row


def find_order(conn, operation_key: str):
    """The order stored under ``operation_key``, or None (chapter 06)."""
    return conn.execute(
        "SELECT * FROM orders WHERE operation_key = :operation_key",
        {"operation_key": operation_key}).fetchone()


def order_body(row) -> dict:
    """The receipt the supplier answers with (chapter 06)."""
    return {"operation_key": row["operation_key"], "receipt": row["receipt"],
            "generation": row["generation"], **json.loads(row["proposal"])}


def release_body(row) -> dict:
    """What a release answers: its own key and the order it released (ch. 08)."""
    return {"operation_key": row["operation_key"], "released": row["order_key"],
            "generation": row["generation"]}


def fence_of(conn, work: str) -> int | None:
    """The highest generation accepted for ``work``, or None (chapter 06)."""
    row = conn.execute("SELECT generation FROM fences WHERE work_id = :work",
                       {"work": work}).fetchone()
    return None if row is None else row[0]


def raise_fence(conn, work: str, generation: int) -> None:
    """Lift ``work``'s fence to ``generation`` if higher (chapters 06, 08)."""
    conn.execute(
        "INSERT INTO fences (work_id, generation) VALUES (:work, :generation)"
        " ON CONFLICT (work_id) DO UPDATE SET generation ="
        " max(generation, excluded.generation)",
        {"work": work, "generation": generation})


def log_refusal(conn, method: str, token: tuple, answer: int) -> None:
    """A request refused before any decision, if its token names a key: the
    usable parts of (key, work, generation) and the answer (chapter 06)."""
    if token[0] is not None:
        with immediate(conn):
            log_request(conn, method, *token, answer)


def log_request(conn, method, operation_key, work, generation, answer) -> None:
    """One decided request, in the transaction that decided it (chapter 06)."""
    conn.execute(
        "INSERT INTO requests (method, operation_key, work_id, generation, answer,"
        " at) VALUES (:method, :operation_key, :work, :generation, :answer, :at)",
        {"method": method, "operation_key": operation_key, "work": work,
         "generation": generation, "answer": answer, "at": time.time()})
