"""The supplier: a real HTTP server process with its own database (chapter 06).

    python -m crashcourse.services.supplier.server --db PATH --ready PATH
        [--drop-first-response] [--hold-first SECONDS [--until-next]] [--reject]
        [--no-fence]
        [--timeout SECONDS] [--busy-ms MS] [--host ADDRESS]

It binds ``--host`` (chapter 10: 0.0.0.0, for the other hosts) on a port the
OS picks and writes ``{"port": N}`` to the ready file (temp file + rename).
Every decision is made by ``crashcourse.services.supplier.store`` in its own
file; this module only speaks HTTP, and every request gets an answer:
a listen backlog of ``BACKLOG`` (1,024) connections, so a burst of that
many callers at once waits instead of being reset (the kernel caps it at
``net.core.somaxconn``: 4,096 on Linux since 5.4, 128 before; more callers
than the backlog at one instant may be reset, issue 35); exactly
``Content-Length`` bytes read, or a refusal (``supplier.request``), and the
connection closed after any error; a silent caller dropped after
``--timeout`` s; a busy, read-only, truncated or never installed store is 503
with ``Retry-After`` (nothing decided, ask again), opened with ``require=``
its tables so a lost file is never recreated empty.

``POST /orders`` takes the operation key in ``Idempotency-Key`` and a fencing
token in ``X-Work-Id`` / ``X-Generation``; the body is the proposal
``{"sku", "quantity", "unit_cents"}``. Answers, following the IETF httpapi
Idempotency-Key draft: 201 new order; 200 the original receipt (same key,
same proposal); 422 same key, other proposal; 409 a request with the same key
is still being decided (ask again); 412 the generation is lower than the
highest this supplier accepted for that work; 403 rejected (fault switch);
400, 408, 411, 413 the request itself is refused. ``GET /orders/{key}``: 200
with the order, or 404. Every order in an answer carries its key as the JSON
field ``operation_key``. Every answered request that names a usable key is in
the ``requests`` table with the status it got, unless the store was down.

``POST /orders/{key}/release`` (chapter 08) releases a reserved order: its OWN
operation key in ``Idempotency-Key``, the same fencing token headers, no body.
201 released; 200 the same release again; 404 no such order; 422 the key
names another release; 409 the order belongs to other work or was released
under another key, or the key is being decided; 412 a stale generation.

``POST /work/{work_id}/fence`` (chapters 06, 08) is a cancel reaching the
supplier: ``X-Generation`` (the cancel's generation), no body. 200 with
``{"work_id", "generation"}``, the fence now; from that commit on every
order or release of that work with a lower generation is 412
(``store.fence_work``). 400 a missing or bad generation, or a body.

Fault switches (orders only): drop the first response after committing (the
connection just closes), hold the first POST for N s before the supplier
looks at it (a request delayed on the way: not yet in flight here), or with
``--until-next`` until a later POST has been decided (N s only its bound: the
later one wins by an event, not by being quicker than N s), reject every
order. ``--no-fence`` is the mutant that ignores the generation.

It serves until killed, or until the process that started it is gone: a
parent killed by SIGKILL never runs its harness's clean-up, and its supplier
would otherwise serve on under init, holding its port and its file (it then
stops, says so in one line where anyone still reads it, and exits 0).

A deleted ``-wal`` (issue 35), what SQLite can and cannot detect. An
acknowledged order is committed into the write-ahead log (``DB-wal``); it
reaches the file ``DB`` itself only at a checkpoint, done when the last
connection closes (then ``-wal`` and ``-shm`` are removed) or as the log
grows. Delete the ``-wal`` before that and the file alone is an older,
CONSISTENT store: ``integrity_check`` passes, nothing in it records the
orders that were lost, so SQLite cannot detect the loss, and a replay of a
lost key would be a new order with a new receipt. What can be refused is
refused: (1) at start, a ``-shm`` with no ``-wal`` beside it is the trace a
killed run leaves when its log is then deleted: exit 2, one line, nothing
served (a close cut short between its two unlinks leaves the same trace, and
is refused too: only a person can know the log was checkpointed); (2) while
it serves, a request that opens the store after the log was deleted, while
another connection still holds the log's index with frames in it, gets
SQLite's "disk I/O error": 503, nothing decided. What cannot be refused: a
log deleted between two such openings while the index says it is empty
(just checkpointed): later commits go to a new log while an open connection
writes to the old, deleted one, and what that one committed is lost without
any error; the 2 of 7 bursts that lost acknowledged orders. Do not delete a
live store's ``-wal``: it is part of the store.

Exit status: 2 bad input (usage, a value out of
range, a ``--db`` or ``--ready`` that is not a file in a writable folder, a
``--db`` that is not an undamaged supplier store: 0 bytes, another program's,
damaged, or its ``-wal`` deleted), 74 an address or a file the
machine refuses (a ``--host`` it cannot bind, a disk that is full). Each is
one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from crashcourse.services.supplier.request import (
    InFlight,
    Refused,
    body_length,
    drain,
    named_token,
    no_body,
    parse_generation,
    parse_proposal,
    parse_token,
    read_exactly,
    usable_key,
)
from crashcourse.services.supplier.store import (
    TABLES,
    accept,
    fence_work,
    install,
    log_refusal,
    lookup,
    order_body,
    release,
)
from crashcourse.store import DEFAULT_BUSY_TIMEOUT_MS, StoreMissing, opened
from crashcourse.validate import (
    BAD_INPUT,
    argument_parser,
    check_number,
    check_place,
    seconds,
)

IO_ERROR = 74  # a place the machine would not bind or write (EX_IOERR)
BACKLOG = 1024  # connections waiting to be accepted (see the module's text)
PARENT_CHECK_S = 0.2  # how often the server looks whether its parent is gone

ORDERS, RELEASE = "/orders", "/release"
WORK, FENCE = "/work/", "/fence"
RETRY_AFTER_S = 1  # what a 503 or an in-flight 409 tells the caller to wait
IN_FLIGHT = InFlight()  # one process: the keys being decided live in memory


class Server(ThreadingHTTPServer):
    """A thread per connection and a backlog for a burst (chapter 06)."""

    request_queue_size = BACKLOG  # the library's 5 reset callers under load;
    # 128 reset 600 callers at once in 7 of 15 runs (issue 35)
    daemon_threads = True


class Handler(BaseHTTPRequestHandler):
    """Every request gets an answer (chapter 06)."""

    protocol_version = "HTTP/1.1"
    timeout = 10.0  # seconds a caller may stay silent (``serve`` sets --timeout)
    config: argparse.Namespace
    first_post = threading.Lock()  # only the first POST can be held or dropped
    next_decided = threading.Event()  # a later POST /orders has been decided
    linger = False  # an error was answered: drain the caller before closing

    def log_message(self, *args) -> None:  # stay quiet: the parent reads our pipes
        pass

    def answer(self, status: int, body: dict, retry: bool = False) -> None:
        """One JSON answer; after an error, close the connection (chapter 06)."""
        data = json.dumps(body, sort_keys=True).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if retry:
                self.send_header("Retry-After", str(RETRY_AFTER_S))
            if status >= 400:  # whatever the caller sent next is never read
                self.send_header("Connection", "close")
                self.close_connection = self.linger = True
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the caller is gone: nobody is left to answer
            self.close_connection = True

    def store(self):
        """The installed file; a lost one is refused, not remade (chapter 06)."""
        return opened(self.config.db, require=TABLES,
                      busy_timeout_ms=self.config.busy_ms, record=True)

    def do_GET(self) -> None:
        self.respond("GET", self.get_order)

    def do_POST(self) -> None:
        self.respond("POST", self.post)

    def respond(self, method: str, handle) -> None:
        """Run ``handle``; every outcome becomes an answer (chapter 06)."""
        try:
            outcome = handle()
        except Refused as refused:
            later = refused.retry  # "ask again" goes out at once; its row follows
            if not later:
                self.log_refused(method, refused.status)
            self.answer(refused.status, refused.body(), refused.retry)
            return self.log_refused(method, refused.status) if later else None
        except (sqlite3.Error, StoreMissing) as down:  # rolled back: not decided
            outcome = 503, {"error": "unavailable", "detail": str(down)}
        except Exception as bug:  # noqa: BLE001  (still an answer, never silence)
            outcome = 500, {"error": "internal", "detail": repr(bug)}
        if outcome is not None:  # None: the fault switch dropped the answer
            self.answer(*outcome, retry=outcome[0] == 503)

    def log_refused(self, method: str, status: int) -> None:
        """Log a refusal that names a key; the store being down only loses
        the row, never the answer (chapter 06)."""
        token = named_token(self.headers)
        if method == "GET":
            token = (self.key_in_path(), None, None)
        try:
            with self.store() as conn:
                log_refusal(conn, method, token, status)
        except (sqlite3.Error, StoreMissing):
            pass

    def key_in_path(self) -> str | None:
        """The ``{key}`` of ``/orders/{key}``, if usable (chapter 06)."""
        prefix = ORDERS + "/"
        return usable_key(self.path[len(prefix):]
                          if self.path.startswith(prefix) else None)

    def get_order(self) -> tuple[int, dict]:
        """``GET /orders/{key}``: 200 with the order, or 404 (chapter 06)."""
        operation_key = self.key_in_path()
        if operation_key is None:
            raise Refused("no such resource", 404, "not_found")
        no_body(self.headers)
        with self.store() as conn:
            row = lookup(conn, operation_key)
        if row is None:
            return 404, {"error": "not_found", "operation_key": operation_key}
        return 200, order_body(row)

    def post(self) -> tuple[int, dict] | None:
        """``POST /orders`` or ``/orders/{key}/release`` (chapters 06, 08)."""
        body = read_exactly(self.rfile, body_length(self.headers),
                            self.connection, self.timeout)
        fenced_work = self.fenced_work()
        if fenced_work is not None:
            return self.fence(fenced_work, body)
        order_key = self.released_order()
        if self.path != ORDERS and order_key is None:
            raise Refused("no such resource", 404, "not_found")
        token = parse_token(self.headers)
        if order_key is None:
            return self.order(token, parse_proposal(body))
        with IN_FLIGHT.holding(token[0]), self.store() as conn:
            return release(conn, token[0], order_key, *token[1:])

    def fenced_work(self) -> str | None:
        """The work id of ``/work/{id}/fence``, else None (chapters 06, 08)."""
        if not (self.path.startswith(WORK) and self.path.endswith(FENCE)):
            return None
        return usable_key(self.path[len(WORK):-len(FENCE)])

    def fence(self, work: str, body: bytes) -> tuple[int, dict]:
        """``POST /work/{id}/fence``: raise the work's fence (chapters 06, 08)."""
        if body:
            raise Refused("a fence carries no body")
        generation = parse_generation(self.headers)
        with self.store() as conn:
            return 200, {"work_id": work,
                         "generation": fence_work(conn, work, generation)}

    def released_order(self) -> str | None:
        """The order key of ``/orders/{key}/release``, else None (chapter 08)."""
        prefix = ORDERS + "/"
        if not (self.path.startswith(prefix) and self.path.endswith(RELEASE)):
            return None
        return usable_key(self.path[len(prefix):-len(RELEASE)])

    def order(self, token: tuple, proposal: dict) -> tuple[int, dict] | None:
        """``POST /orders`` through the fault switches (chapter 06)."""
        first = Handler.first_post.acquire(blocking=False)
        if first and self.config.hold_first > 0:  # delayed on the way, not looked at
            if self.config.until_next:  # the order of the two made by an event:
                Handler.next_decided.wait(self.config.hold_first)  # a bound only
            else:
                time.sleep(self.config.hold_first)
        with IN_FLIGHT.holding(token[0]), self.store() as conn:
            status, result = accept(conn, *token, proposal,
                                    fence=not self.config.no_fence,
                                    reject=self.config.reject)
        if not first:  # committed: a held first request may go on now
            Handler.next_decided.set()
        if first and self.config.drop_first_response and status in (200, 201):
            self.close_connection = True  # committed, but the caller hears nothing
            return None
        return status, result

    def finish(self) -> None:
        """Close after an error without resetting the answer away (ch. 06)."""
        super().finish()
        if self.linger:
            drain(self.connection)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line above: the file, the ready file, the faults (chapter 06)."""
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="the supplier's SQLite file")
    parser.add_argument("--ready", required=True, help="write the port here")
    parser.add_argument("--drop-first-response", action="store_true")
    parser.add_argument("--hold-first", type=seconds, default=0.0, metavar="SECONDS",
                        help="hold the first POST /orders this long on its way in")
    parser.add_argument("--until-next", action="store_true",
                        help="with --hold-first: hold it until a later POST /orders"
                        " is decided (SECONDS is then only the bound), so the later"
                        " one is decided first however slow its sender (issue 36)")
    parser.add_argument("--reject", action="store_true")
    parser.add_argument("--no-fence", action="store_true", help="the mutant")
    parser.add_argument("--timeout", default=str(Handler.timeout),
                        metavar="SECONDS", help="how long a caller may be silent")
    parser.add_argument("--busy-ms", type=int, default=DEFAULT_BUSY_TIMEOUT_MS,
                        help="how long a request waits for the store's lock")
    parser.add_argument("--host", default="127.0.0.1", help="listen on this address")
    config = parser.parse_args(argv)
    try:  # inf once passed "positive", and then no request was answered
        config.timeout = check_number("--timeout", config.timeout, 0, 3600,
                                      low_open=True)
    except ValueError as error:
        parser.error(f"--timeout and --busy-ms must be positive: {error}")
    if not config.busy_ms > 0:
        parser.error("--timeout and --busy-ms must be positive")
    if not (config.host.isascii() and config.host.isprintable()):
        parser.error(f"--host {config.host!r} is not an address (undecodable"
                     " or non-ASCII bytes)")  # bind's TypeError was a traceback
    if not 0 <= config.hold_first <= 3600:  # NaN and inf fail too
        parser.error("--hold-first must be 0 to 3600 seconds")
    if config.until_next and not config.hold_first > 0:
        parser.error("--until-next needs --hold-first SECONDS (its bound)")
    try:  # a device, a FIFO or a folder is no store and no ready file: as
        check_place("--db", config.db)  # root, os.replace would put a file
        check_place("--ready", config.ready)  # where /dev/full was
        check_place("--ready", config.ready + ".partial")
    except ValueError as error:
        parser.error(str(error))
    return config


def refuse_lost_log(db: str) -> None:
    """``StoreMissing`` for a store whose write-ahead log was deleted after a
    run was killed: its ``-shm`` (the log's index) is there, the ``-wal`` is
    not. See "A deleted -wal" in the module's text (issue 35)."""
    if (os.path.isfile(db) and os.path.lexists(f"{db}-shm")
            and not os.path.lexists(f"{db}-wal")):
        raise StoreMissing(
            f"{db}-shm is there without its -wal: the write-ahead log, which may"
            " hold acknowledged orders not yet in the file, was deleted; SQLite"
            " cannot tell which, so the store is refused, not served")


def serve(config: argparse.Namespace) -> None:
    """Install the store, bind, announce the port, serve until killed (chapter 06)."""
    server = Server((config.host, 0), Handler)  # bound first: a bad --host
    refuse_lost_log(config.db)
    install(config.db)  # leaves no store behind
    Handler.config, Handler.timeout = config, config.timeout
    ready = Path(config.ready)
    partial = ready.with_name(ready.name + ".partial")
    partial.write_text(json.dumps({"port": server.server_address[1]}))
    os.replace(partial, ready)
    threading.Thread(target=stop_when_orphaned, args=(server, os.getppid()),
                     daemon=True, name="parent-watch").start()
    server.serve_forever()


def stop_when_orphaned(server: Server, parent: int) -> None:
    """Shut ``server`` down once its parent is gone: an orphan is re-parented,
    so ``getppid`` no longer names ``parent`` (polled: PR_SET_PDEATHSIG is
    Linux's alone and fires when the parent's forking THREAD ends)."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    server.shutdown()  # serve_forever returns; main exits 0
    try:  # the parent held our pipes: most likely nobody reads this line
        print(f"server.py: the process that started it ({parent}) is gone:"
              " stopped", file=sys.stderr)
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    """Serve; what the machine refuses (an address, a file) is one line (ch. 06)."""
    config = parse(argv)
    try:
        serve(config)
    except StoreMissing as error:  # 0 bytes, another's, damaged: not a supplier's
        print(f"server.py: error: --db {config.db!r}: {error}", file=sys.stderr)
        return BAD_INPUT
    except sqlite3.OperationalError as error:  # full, I/O, locked: the machine's
        print(f"server.py: error: --db {config.db!r}: the machine refused:"
              f" {error}", file=sys.stderr)
        return IO_ERROR
    except sqlite3.DatabaseError as error:  # not a database: not a supplier's file
        print(f"server.py: error: --db {config.db!r}: {error}", file=sys.stderr)
        return BAD_INPUT
    except OSError as error:
        print(f"server.py: error: {error}", file=sys.stderr)
        return IO_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
