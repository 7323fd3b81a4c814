"""The supplier: a real HTTP server process with its own database (chapter 06).

    python -m crashcourse.services.supplier --db PATH --ready PATH
        [--drop-first-response] [--hold-first SECONDS] [--reject] [--no-fence]

It binds 127.0.0.1 on a port the OS picks and writes ``{"port": N}`` to the
ready file (temp file + rename, so a reader never sees half of it). Every
decision is made by ``crashcourse.services.supplier_store`` in the supplier's
own file; this module only speaks HTTP.

``POST /orders`` takes the operation key in ``Idempotency-Key`` and a fencing
token in ``X-Work-Id`` / ``X-Generation``; the body is the proposal
``{"sku", "quantity", "unit_cents"}``. Answers: 201 new order; 200 the original
receipt (same key, same proposal); 409 same key, other proposal; 412 the
generation is lower than the highest this supplier accepted for that work;
422 rejected (fault switch); 400 malformed, nothing stored.
``GET /orders/{key}``: 200 with the order, or 404. Every order in an answer
carries its key as the JSON field ``operation_key``.

``POST /orders/{key}/release`` (chapter 08) releases a reserved order: its OWN
operation key in ``Idempotency-Key``, the same fencing token headers, no body.
201 released; 200 the same release again; 404 no such order; 409 another
release or other work; 412 a stale generation; 400 malformed.

Fault switches (orders only): drop the first response after committing (the
connection just closes), hold the first POST for N s before looking at it,
reject every order. ``--no-fence`` is the mutant that ignores the generation.
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

from crashcourse.services.supplier_store import (
    BadRequest,
    accept,
    install,
    lookup,
    order_body,
    parse_proposal,
    parse_token,
    release,
)
from crashcourse.store import opened

ORDERS, RELEASE = "/orders", "/release"


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
        prefix = ORDERS + "/"
        if not self.path.startswith(prefix) or len(self.path) == len(prefix):
            return self.answer(404, {"error": "not_found"})
        operation_key = self.path[len(prefix):]
        with opened(self.config.db) as conn:
            row = lookup(conn, operation_key)
        if row is None:
            return self.answer(404, {"error": "not_found",
                                     "operation_key": operation_key})
        self.answer(200, order_body(row))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, 65536))
        order_key = self.released_order()
        if self.path != ORDERS and order_key is None:
            return self.answer(404, {"error": "not_found"})
        try:
            operation_key, work, generation = parse_token(self.headers)
            proposal = parse_proposal(body) if order_key is None else None
        except BadRequest as bad:
            return self.answer(400, {"error": "bad_request", "detail": str(bad)})
        if order_key is not None:
            with opened(self.config.db) as conn:
                return self.answer(*release(conn, operation_key, order_key, work,
                                            generation))
        self.order(operation_key, work, generation, proposal)

    def released_order(self) -> str | None:
        """The order key of ``/orders/{key}/release``, else None (chapter 08)."""
        prefix = ORDERS + "/"
        if not (self.path.startswith(prefix) and self.path.endswith(RELEASE)):
            return None
        return self.path[len(prefix):-len(RELEASE)] or None

    def order(self, operation_key: str, work: str, generation: int,
              proposal: dict) -> None:
        """``POST /orders`` through the fault switches (chapter 06)."""
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
