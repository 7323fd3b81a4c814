"""The supplier: a real HTTP server process with its own database (chapter 06).

    python -m crashcourse.services.supplier --db PATH --ready PATH
        [--drop-first-response] [--hold-first SECONDS] [--reject] [--no-fence]

It binds 127.0.0.1 on a port the OS picks and writes ``{"port": N}`` to the
ready file (temp file + rename, so a reader never sees half of it).

``POST /orders`` takes the operation key in ``Idempotency-Key`` and a fencing
token in ``X-Work-Id`` / ``X-Generation``; the body is the proposal
``{"sku", "quantity", "unit_cents"}``. Answers: 201 new order; 200 the original
receipt (same key, same proposal); 409 same key, other proposal; 412 the
generation is lower than the highest this supplier accepted for that work;
422 rejected (fault switch); 400 malformed, nothing stored.
``GET /orders/{key}``: 200 with the order, or 404. Every order in an answer
carries its key as the JSON field ``operation_key``.

Fault switches: drop the first response after committing (the connection just
closes), hold the first POST for N s before looking at it, reject every order.
``--no-fence`` is the mutant that ignores the generation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from crashcourse.store import ensure_schema, immediate, opened
from crashcourse.validate import canonical

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
)
"""
FIELDS = {"sku": str, "quantity": int, "unit_cents": int}
LIMITS = {"quantity": 10_000, "unit_cents": 10**9}


class BadRequest(ValueError):
    """Malformed input: answered with 400 and nothing stored."""


def parse_proposal(body: bytes) -> dict:
    """Exactly sku (text), quantity and unit_cents (positive, bounded) (chapter 06)."""
    try:
        proposal = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("body is not JSON") from None
    if not isinstance(proposal, dict) or set(proposal) != set(FIELDS):
        raise BadRequest(f"body must have exactly {sorted(FIELDS)}")
    for name, kind in FIELDS.items():
        value = proposal[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise BadRequest(f"{name} must be {kind.__name__}")
        if kind is int and not 0 < value <= LIMITS[name]:
            raise BadRequest(f"{name} out of range")
        if kind is str and not value.strip():
            raise BadRequest(f"{name} must not be empty")
    return proposal


def parse_token(headers) -> tuple[str, str, int]:
    """Idempotency-Key, X-Work-Id and a positive X-Generation (chapter 06)."""
    operation_key = headers.get("Idempotency-Key", "")
    work, generation = headers.get("X-Work-Id", ""), headers.get("X-Generation", "")
    if not operation_key.strip() or not work.strip() or not generation.isdigit():
        raise BadRequest("Idempotency-Key, X-Work-Id and X-Generation required")
    if int(generation) < 1:
        raise BadRequest("X-Generation must be positive")
    return operation_key, work, int(generation)


def accept(conn, operation_key: str, work: str, generation: int, proposal: dict,
           fence=True):
    """Decide one POST in one transaction: (status, answer body) (chapter 06)."""
    with immediate(conn):
        highest = conn.execute(
            "SELECT generation FROM fences WHERE work_id = :work", {"work": work}
        ).fetchone()
        if fence and highest is not None and generation < highest[0]:
            status, body = 412, {"error": "stale_generation", "highest": highest[0]}
        else:
            status, body = place(conn, operation_key, work, generation, proposal)
        conn.execute(
            "INSERT INTO requests (method, operation_key, work_id, generation,"
            " answer, at) VALUES ('POST', :operation_key, :work, :generation,"
            " :answer, :at)",
            {"operation_key": operation_key, "work": work, "generation": generation,
             "answer": status, "at": time.time()},
        )
    return status, body


def place(conn, operation_key: str, work: str, generation: int, proposal: dict):
    """Replay, conflict, or a new order that raises this work's fence (chapter 06)."""
    row = find_order(conn, operation_key)
    if row is not None and row["proposal"] != canonical(proposal):
        return 409, {"error": "conflict", "operation_key": operation_key}
    if row is not None:
        return 200, order_body(row)
    serial = conn.execute("SELECT count(*) FROM orders").fetchone()[0] + 1
    new = {"operation_key": operation_key, "work": work, "generation": generation,
           "proposal": canonical(proposal), "receipt": f"R-{serial:05d}"}
    conn.execute(
        "INSERT INTO orders (operation_key, work_id, proposal, generation, receipt)"
        " VALUES (:operation_key, :work, :proposal, :generation, :receipt)", new)
    conn.execute(
        "INSERT INTO fences (work_id, generation) VALUES (:work, :generation)"
        " ON CONFLICT (work_id) DO UPDATE SET generation ="
        " max(generation, excluded.generation)", new)
    return 201, order_body(find_order(conn, operation_key))


def find_order(conn, operation_key: str):
    """The order stored under ``operation_key``, or None (chapter 06)."""
    return conn.execute(
        "SELECT * FROM orders WHERE operation_key = :operation_key",
        {"operation_key": operation_key}).fetchone()


def order_body(row) -> dict:
    """The receipt the supplier answers with (chapter 06)."""
    return {"operation_key": row["operation_key"], "receipt": row["receipt"],
            "generation": row["generation"], **json.loads(row["proposal"])}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    config: argparse.Namespace
    first_post = threading.Lock()  # only the first POST can be held or dropped

    def log_message(self, *args) -> None:  # stay quiet: the parent reads our pipes
        pass

    def answer(self, status: int, body: dict) -> None:
        data = json.dumps(body, sort_keys=True).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        prefix = "/orders/"
        if not self.path.startswith(prefix) or len(self.path) == len(prefix):
            return self.answer(404, {"error": "not_found"})
        operation_key = self.path[len(prefix):]
        with opened(self.config.db) as conn:
            row = find_order(conn, operation_key)
            with immediate(conn):
                conn.execute(
                    "INSERT INTO requests (method, operation_key, answer, at)"
                    " VALUES ('GET', :operation_key, :answer, :at)",
                    {"operation_key": operation_key, "answer": 200 if row else 404,
                     "at": time.time()})
        if row is None:
            return self.answer(404, {"error": "not_found",
                                     "operation_key": operation_key})
        self.answer(200, order_body(row))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, 65536))
        if self.path != "/orders":
            return self.answer(404, {"error": "not_found"})
        try:
            operation_key, work, generation = parse_token(self.headers)
            proposal = parse_proposal(body)
        except BadRequest as bad:
            return self.answer(400, {"error": "bad_request", "detail": str(bad)})
        first = Handler.first_post.acquire(blocking=False)
        if first and self.config.hold_first > 0:
            time.sleep(self.config.hold_first)  # in flight, nothing looked at yet
        if self.config.reject:
            status, result = 422, {"error": "rejected"}
        else:
            with opened(self.config.db) as conn:
                status, result = accept(conn, operation_key, work, generation,
                                        proposal, fence=not self.config.no_fence)
        if first and self.config.drop_first_response and status in (200, 201):
            self.close_connection = True  # committed, but the caller hears nothing
            return
        self.answer(status, result)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line above: the file, the ready file, the faults (chapter 06)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="the supplier's SQLite file")
    parser.add_argument("--ready", required=True, help="write the port here")
    parser.add_argument("--drop-first-response", action="store_true")
    parser.add_argument("--hold-first", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--reject", action="store_true")
    parser.add_argument("--no-fence", action="store_true", help="the mutant")
    return parser.parse_args(argv)


def install(path: str | Path) -> None:
    """Create the supplier's tables in its own file (chapter 06)."""
    with opened(path) as conn:
        ensure_schema(conn, SCHEMA)


def serve(config: argparse.Namespace) -> None:
    """Install the store, bind, announce the port, serve until killed (chapter 06)."""
    install(config.db)
    Handler.config = config
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    ready = Path(config.ready)
    partial = ready.with_name(ready.name + ".partial")
    partial.write_text(json.dumps({"port": server.server_address[1]}))
    os.replace(partial, ready)
    server.serve_forever()


if __name__ == "__main__":
    serve(parse())
    sys.exit(0)
