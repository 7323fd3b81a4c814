"""Grades exercise 06.1 (cancel_delayed.py) against a real supplier process.

Every verdict is read from durable rows: the shop's ``work`` and ``orders``,
the supplier's ``orders``, ``fences`` and ``requests``; your report is only
checked against them. Some tests put a relay (a small HTTP server in this
process) between your code and the supplier. It forwards each of your
requests in turn, and it holds the POST of an order the paused holder had
already let out (SENDING): that POST is on its way, and goes on to the
supplier only when the test says so, just before one of your requests or
after your settlement returned (events, no sleeps; every wait is bounded).
"""

import http.client
import http.server
import json
import sqlite3
import sys
import threading
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest

from crashcourse import claims
from crashcourse.claims import fence, orders
from crashcourse.lab.example import ScriptedModel
from crashcourse.lab.harness import Harness
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import connect, opened, sql_list

SENT = orders.Proposal("flour-25kg", 6, 2150)
UNSENT = orders.Proposal("rye-10kg", 2, 1800)
IN_FLIGHT = orders.Proposal("salt-5kg", 1, 400)
ANSWER_LOST = orders.Proposal("yeast-1kg", 3, 650)
FORWARDED = ("Content-Type", "Idempotency-Key", "X-Work-Id", "X-Generation")
BOUND_S = 60.0  # every wait for the relay or the holder: never reached when all works
SHORTCUTS = ("settle_cancelled", "settle_all_cancelled")


@pytest.fixture(scope="module")
def supplier(tmp_path_factory):
    db = tmp_path_factory.mktemp("s") / "sup.db"
    with Harness() as harness, start_supplier(harness, db) as running:
        yield running


def unavailable(*args, **kwargs):
    raise AssertionError("exercise 06.1: write the settlement yourself;"
                         " orders.settle_cancelled and settle_all_cancelled"
                         " are the runtime's answer, unavailable here")


@pytest.fixture
def no_shortcut(monkeypatch):
    """The runtime's own settlement would make the exercise one call. Its
    functions' code is swapped out (not only their names in ``orders``), so a
    reference taken under another name, or the workers that call them, fail
    the same way; a reloaded ``orders`` (fresh functions) is an error."""
    functions = {name: getattr(orders, name) for name in SHORTCUTS}
    for function in functions.values():
        monkeypatch.setattr(function, "__code__", unavailable.__code__)
        monkeypatch.setattr(function, "__defaults__", None)
    yield
    assert sys.modules[orders.__name__] is orders, "orders was imported afresh"
    assert all(getattr(orders, name) is function
               for name, function in functions.items()), "orders was reloaded"


@pytest.fixture
def mod(answer, no_shortcut):
    return answer("ch06", "cancel_delayed")


def signed_off(conn, claim, proposal):
    operation_key = orders.propose(conn, claim, ScriptedModel(proposal))
    orders.sign_off(conn, operation_key)
    return operation_key


def holding_four_orders(conn, origin, supplier):
    """A claimed request: one order accepted by the supplier but not yet
    recorded (SENDING), one accepted whose answer was lost (UNKNOWN), one
    admitted whose POST has not reached the supplier (SENDING: it may still
    arrive), one signed off and never sent."""
    orders.install(conn)
    claims.enqueue(conn, origin, "counter", "Restock flour")
    claim = claims.claim(conn, "worker-a", ttl=60)
    sent, answer_lost, in_flight, unsent = (
        signed_off(conn, claim, p)
        for p in (SENT, ANSWER_LOST, IN_FLIGHT, UNSENT))
    for operation_key in (sent, answer_lost, in_flight):
        orders.admit(conn, claim, operation_key, wait_s=5)
    for operation_key, proposal in ((sent, SENT), (answer_lost, ANSWER_LOST)):
        status, _ = orders.post(supplier.url, operation_key, claim, proposal, 5)
        assert status == 201, (
            "the grader's world, not your answer: the supplier was to accept"
            f" the holder's order {proposal}, and answered {status}")
    orders.record(conn, answer_lost, orders.UNKNOWN)  # the reply never came
    return claim, {"sent": sent, "answer_lost": answer_lost,
                   "in_flight": in_flight, "unsent": unsent}


@pytest.fixture
def shop(tmp_path, supplier):
    with opened(tmp_path / "shop.db") as conn:
        claim, ops = holding_four_orders(conn, f"phone:{tmp_path.name}", supplier)
        yield conn, claim, ops


def status_of(conn, operation_key):
    return conn.execute(
        "SELECT status, receipt FROM orders WHERE operation_key = :operation_key",
        {"operation_key": operation_key}).fetchone()


def at_the_supplier(supplier, work_id):
    """The supplier's rows for ``work_id``: {operation_key: receipt}, and its
    fence (None if it has none)."""
    with opened(supplier.db) as conn:
        placed = {row["operation_key"]: row["receipt"] for row in conn.execute(
            "SELECT operation_key, receipt FROM orders WHERE work_id = :w",
            {"w": work_id})}
        fenced = conn.execute("SELECT generation FROM fences WHERE work_id = :w",
                              {"w": work_id}).fetchone()
    return placed, None if fenced is None else fenced[0]


def posts(supplier, work_id):
    with opened(supplier.db) as conn:
        return conn.execute(
            "SELECT count(*) FROM requests WHERE method = 'POST'"
            " AND work_id = :w", {"w": work_id}).fetchone()[0]


def last_request(supplier) -> int:
    """The supplier's last logged request: a mark in its ``requests`` table."""
    with opened(supplier.db) as conn:
        return conn.execute("SELECT coalesce(max(seq), 0) FROM requests").fetchone()[0]


def placed_since(supplier, work_id, mark) -> list:
    """Orders of ``work_id`` the supplier accepted after ``mark``."""
    with opened(supplier.db) as conn:
        return [tuple(row) for row in conn.execute(
            "SELECT operation_key, generation, answer FROM requests"
            " WHERE method = 'POST' AND work_id = :w AND seq > :mark"
            " AND answer IN (200, 201)", {"w": work_id, "mark": mark})]


def cancelled_here(conn, claim):
    """The cancel as the shop's rows hold it: CANCELLED, under a generation
    no claim holds (the one after the holder's); that generation."""
    row = claims.work_row(conn, claim.id)
    assert (row["status"], row["generation"]) == (claims.CANCELLED,
                                                  claim.generation + 1), (
        "the cancel is not durable in the work row: it must be CANCELLED under"
        " the generation after the holder's, so the holder's claim is stale;"
        f" the row is {row['status']} at generation {row['generation']}, the"
        f" holder's generation {claim.generation}")
    return row["generation"]


def shop_agrees_with_the_supplier(conn, supplier, claim, ops):
    """The shop's rows say what the supplier's rows say: the work cancelled
    and the supplier fenced at the cancel's generation; an order the supplier
    holds is CONFIRMED with its receipt; one it does not hold is REVOKED.
    Nothing is left uncertain: the supplier answered."""
    generation = cancelled_here(conn, claim)
    placed, fenced = at_the_supplier(supplier, claim.id)
    assert fenced is not None and fenced >= generation, (
        f"the supplier's fence is {fenced}, the cancel's generation {generation}")
    for label, operation_key in ops.items():
        row = status_of(conn, operation_key)
        if operation_key in placed:
            assert (row["status"], row["receipt"]) == (
                orders.CONFIRMED, placed[operation_key]), (
                f"the {label} order is at the supplier, and the shop does not"
                " say CONFIRMED with its receipt: it was not looked up after"
                f" the fence; it is {row['status']} with {row['receipt']!r}")
        else:
            assert row["status"] == orders.REVOKED, (
                f"the {label} order is not at the supplier (fenced), and the"
                f" shop does not say REVOKED: it is {row['status']}")


class Relay(http.server.ThreadingHTTPServer):
    """Between your code and the supplier. It forwards your requests one at a
    time, in your order, and counts them. The holder's POST of ``held`` it
    holds: ``arrived`` is set once it is in, and it goes on to the supplier
    only at ``deliver()``, which returns once the supplier has decided it.
    ``deliver_before=N`` delivers it just before forwarding your N-th request;
    ``refuse_fence=status`` answers every fence itself (503: the supplier
    busy or down; 404: a supplier without fences), unforwarded."""

    daemon_threads = True

    def __init__(self, supplier, held=None, deliver_before=0, refuse_fence=None):
        super().__init__(("127.0.0.1", 0), RelayHandler)
        self.target = urlsplit(supplier.url)
        self.held, self.deliver_before = held, deliver_before
        self.refuse_fence = refuse_fence
        self.count, self.lock = 0, threading.Lock()
        self.arrived, self.release, self.landed = (threading.Event() for _ in "abc")
        self.held_answer = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def deliver(self) -> bool:
        """Let the held POST go on; whether the supplier decided it in time."""
        if not self.arrived.is_set():
            return False
        self.release.set()
        return self.landed.wait(BOUND_S)

    def forward(self, handler, body):
        upstream = http.client.HTTPConnection(self.target.hostname,
                                              self.target.port, timeout=BOUND_S)
        try:
            upstream.request(handler.command, handler.path, body=body or None,
                             headers={name: handler.headers[name] for name in FORWARDED
                                      if handler.headers[name] is not None})
            response = upstream.getresponse()
            return response.status, response.read()
        finally:
            upstream.close()

    def hold(self, handler, body):
        """The holder's POST: in, held until ``deliver``, then decided."""
        self.arrived.set()
        try:
            if not self.release.wait(BOUND_S):  # nothing decided: ask again
                return 503, b'{"error": "held past the bound"}'
            self.held_answer = self.forward(handler, body)
            return self.held_answer
        finally:
            self.landed.set()

    def pass_on(self, handler, body):
        """One of your requests, after the held POST if it is its turn."""
        with self.lock:
            self.count += 1
            if self.count == self.deliver_before:
                self.deliver()
            if handler.path.endswith("/fence") and self.refuse_fence:
                return self.refuse_fence, b'{"error": "unavailable"}'
            return self.forward(handler, body)


class RelayHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.relay()

    def do_POST(self):
        self.relay()

    def relay(self):
        server = self.server
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        holding = (self.command == "POST" and server.held is not None
                   and self.headers.get("Idempotency-Key") == server.held
                   and not server.arrived.is_set())
        status, answer = (server.hold if holding else server.pass_on)(self, body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


@contextmanager
def relay(supplier, **options):
    server = Relay(supplier, **options)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=BOUND_S)


@contextmanager
def holder_posting(between, claim, ops):
    """The paused holder's POST of the order it admitted, sent now through
    ``between`` and held there; yields once it is in. On the way out it is
    delivered if it has not been, and the holder's thread is joined."""
    answers = []

    def post():
        try:
            answers.append(orders.post(between.url, ops["in_flight"], claim,
                                       IN_FLIGHT, BOUND_S)[0])
        except orders.ResponseLost:
            answers.append(None)

    holder = threading.Thread(target=post, daemon=True)
    holder.start()
    try:
        assert between.arrived.wait(BOUND_S), "the holder's POST never left"
        yield answers
    finally:
        between.deliver()
        holder.join(BOUND_S)
    assert not holder.is_alive(), "the holder's POST never came back"


def test_the_cancel_is_durable_here_and_at_the_supplier(mod, shop, supplier):
    """The work row's generation moved on (the report's number is not taken
    on trust), the supplier's fence is at it, and the holder's delayed
    completion is refused."""
    conn, claim, _ = shop
    report = mod.cancel_and_settle(conn, claim.id, supplier.url)
    generation = cancelled_here(conn, claim)
    assert report["generation"] == generation, (
        "the report's generation is not the one the work row holds:"
        f" report {report['generation']}, row {generation}")
    fenced = at_the_supplier(supplier, claim.id)[1]
    assert fenced is not None and fenced >= generation, (
        "the supplier was not fenced at the cancel's generation, so the"
        f" holder's late POST could still land: fence {fenced}, cancel's"
        f" generation {generation}")
    with pytest.raises(fence.StaleClaim):
        fence.finish(conn, claim, "DONE", "the delayed result")
        pytest.fail("the holder's delayed completion was let in after the cancel: the"
                    " cancel did not leave the work CANCELLED under a new generation,"
                    " so the holder's claim is still live")
    status = claims.work_row(conn, claim.id)["status"]
    assert status == claims.CANCELLED, (
        f"the holder's delayed completion changed the cancelled work: {status}")


def test_unsent_revoked_sent_discovered_nothing_resent(mod, shop, supplier):
    conn, claim, ops = shop
    before = posts(supplier, claim.id)
    report = mod.cancel_and_settle(conn, claim.id, supplier.url)
    assert report["revoked"] == 1, (
        "the report does not count the one signed-off, never-sent order as"
        f" revoked: revoked={report['revoked']}")
    unsent = status_of(conn, ops["unsent"])["status"]
    assert unsent == orders.REVOKED, (
        f"the order that was never sent was not revoked: it is {unsent}")
    placed, _ = at_the_supplier(supplier, claim.id)
    for found in ("sent", "answer_lost"):  # SENDING and UNKNOWN alike
        row = status_of(conn, ops[found])
        assert (row["status"], row["receipt"]) == (orders.CONFIRMED,
                                                   placed.get(ops[found])), (
            f"the {found} order the supplier holds was not looked up and"
            " CONFIRMED with its receipt (SENDING and UNKNOWN may both be"
            f" outside): it is {row['status']} with receipt {row['receipt']!r}")
    looked_up = report["looked_up"]
    assert looked_up == {ops["sent"]: orders.CONFIRMED,
                         ops["answer_lost"]: orders.CONFIRMED,
                         ops["in_flight"]: orders.NOT_FOUND}, (
        "the report's looked_up does not name each order that may be outside"
        f" with the supplier's answer: {looked_up}")
    sent = posts(supplier, claim.id)
    assert sent == before, (
        "the settlement sent an order again: it must look orders up, never"
        f" POST them; {sent - before} new POSTs")


def settled_with_the_post_held(mod, path, origin, supplier, deliver_before=0):
    """Your settlement through the relay, the holder's POST held in it and
    delivered just before your ``deliver_before``-th request, or (0, or past
    your last) after you returned. The orders of the supplier accepted after
    your settlement returned, and the shop's verdicts agreeing with its rows."""
    with opened(path) as conn:
        claim, ops = holding_four_orders(conn, origin, supplier)
        with relay(supplier, held=ops["in_flight"],
                   deliver_before=deliver_before) as between, \
                holder_posting(between, claim, ops):
            mod.cancel_and_settle(conn, claim.id, between.url)
            mark = last_request(supplier)  # the settlement has returned
            assert between.deliver(), "the supplier never decided the held POST"
        late = placed_since(supplier, claim.id, mark)
        shop_agrees_with_the_supplier(conn, supplier, claim, ops)
        return late


def test_a_post_held_until_after_the_settlement_never_lands(mod, tmp_path,
                                                            supplier):
    """The holder's POST of its admitted order is on its way while you
    settle, and reaches the supplier only after your settlement returned. It
    must be refused: no order lands for work you have settled, and the order
    you found missing is REVOKED (the two databases agree)."""
    late = settled_with_the_post_held(mod, tmp_path / "shop.db",
                                      f"phone:{tmp_path.name}", supplier)
    assert late == [], "an order landed after the settlement"


def requests_of(mod, folder, supplier) -> int:
    """How many requests your settlement sends the supplier."""
    with opened(folder / "probe-requests.db") as conn:
        claim, _ = holding_four_orders(conn, f"phone:{folder.name}-requests",
                                       supplier)
        with relay(supplier) as counting:
            mod.cancel_and_settle(conn, claim.id, counting.url)
        return counting.count


def test_the_held_post_arriving_before_any_of_your_requests_is_told_truly(
        mod, tmp_path, supplier):
    """The holder's held POST reaches the supplier just before each request
    your settlement sends, in turn (after the last: the test above). Before
    the fence it is placed, and the shop must say CONFIRMED with its
    receipt; after the fence it is refused, and the shop must say REVOKED.
    Either way the two databases agree, whatever order you asked in."""
    count = requests_of(mod, tmp_path, supplier)
    assert count >= 2, (  # the fence, and at least one lookup
        "the settlement sent fewer than two requests to the supplier: it must"
        f" fence, then look up what may be outside; {count} requests")
    for before in range(1, count + 1):
        late = settled_with_the_post_held(
            mod, tmp_path / f"before-{before}.db",
            f"phone:{tmp_path.name}-before-{before}", supplier, before)
        assert late == [], (
            f"with the held POST delivered before your request {before}, an"
            " order landed after your settlement returned: the fence came too"
            f" late or not at all; {late}")


@pytest.mark.parametrize("refused", [503, 404])
def test_without_a_confirmed_fence_nothing_is_revoked(mod, tmp_path, supplier,
                                                      refused):
    """The supplier does not confirm the fence (503: down or busy; 404: a
    supplier that has no fence). Your cancel still commits here, but nothing
    at the supplier has changed, so a NOT_FOUND proves nothing: raise
    ``orders.ResponseLost`` and leave the orders that may be outside
    uncertain. The held POST then arrives, and is placed."""
    with opened(tmp_path / "shop.db") as conn:
        claim, ops = holding_four_orders(conn, f"phone:{tmp_path.name}", supplier)
        with relay(supplier, held=ops["in_flight"], refuse_fence=refused) as down, \
                holder_posting(down, claim, ops):
            with pytest.raises(orders.ResponseLost):
                said = mod.cancel_and_settle(conn, claim.id, down.url)
                pytest.fail(f"the supplier did not confirm the fence ({refused}), and"
                            " the cancel settled anyway: cancel_and_settle answered"
                            f" {said!r} instead of raising orders.ResponseLost (a"
                            " NOT_FOUND proves nothing then)")
            assert down.deliver(), "the supplier never decided the held POST"
        cancelled_here(conn, claim)
        unsent = status_of(conn, ops["unsent"])["status"]
        assert unsent == orders.REVOKED, (
            "the order that was never sent was not revoked with the cancel:"
            f" it is {unsent}")
        placed, fenced = at_the_supplier(supplier, claim.id)
        assert fenced == claim.generation, (  # never fenced: the relay refused it
            "the grader's world, not your answer: the relay refused the fence,"
            f" so the supplier's fence was to stay at {claim.generation}, and"
            f" it is {fenced}")
        assert ops["in_flight"] in placed, (  # so the held POST was placed
            "the grader's world, not your answer: with no fence the held POST"
            f" was to be placed, and the supplier holds only {sorted(placed)}")
        in_flight = status_of(conn, ops["in_flight"])["status"]
        assert in_flight in orders.UNCERTAIN, (
            "the order in flight was settled although the fence was never"
            " confirmed: a NOT_FOUND then proves nothing (the POST arrived"
            f" after), so it must stay uncertain; it is {in_flight}")
        for found in ("sent", "answer_lost"):  # uncertain still, or found: true
            row = status_of(conn, ops[found])
            assert row["status"] in orders.UNCERTAIN or (
                row["status"], row["receipt"]) == (orders.CONFIRMED,
                                                   placed.get(ops[found])), (
                f"without a confirmed fence the {found} order was neither left"
                " uncertain nor CONFIRMED with the supplier's receipt: it is"
                f" {row['status']} with receipt {row['receipt']!r}")


@pytest.mark.parametrize("table", ["work", "orders"])
def test_a_crash_inside_the_cancel_leaves_all_of_it_or_none(mod, shop, supplier,
                                                             table):
    """The process dies at the cancel's first write to ``table`` (SQLite refuses
    the statement, as a kill would leave it undone): afterwards the work is
    cancelled AND its unsent order revoked, or neither."""
    conn, claim, ops = shop

    def dies_at_the_write(action, name, *_):
        hit = action == sqlite3.SQLITE_UPDATE and name == table
        return sqlite3.SQLITE_DENY if hit else sqlite3.SQLITE_OK

    conn.set_authorizer(dies_at_the_write)
    try:
        with pytest.raises(sqlite3.DatabaseError):
            said = mod.cancel_and_settle(conn, claim.id, supplier.url)
            pytest.fail(f"the crash at the cancel's first write to {table} was"
                        f" swallowed: cancel_and_settle answered {said!r} instead of"
                        " letting the DatabaseError through")
    finally:
        conn.set_authorizer(None)
    cancelled = claims.work_row(conn, claim.id)["status"] == claims.CANCELLED
    revoked = status_of(conn, ops["unsent"])["status"] == orders.REVOKED
    assert cancelled == revoked, (
        f"a crash at the cancel's first write to {table} left half a cancel:"
        " the work cancelled and its unsent order revoked must be one"
        f" transaction; cancelled={cancelled}, revoked={revoked}")


def statements_of(mod, folder, supplier) -> int:
    with opened(folder / "probe.db") as conn:
        claim, _ = holding_four_orders(conn, f"phone:{folder.name}-probe", supplier)
        seen = []
        conn.set_trace_callback(seen.append)
        mod.cancel_and_settle(conn, claim.id, supplier.url)
        conn.set_trace_callback(None)
    return len(seen)


def cancel_with_the_holder_at(mod, path, origin, supplier, boundary) -> dict:
    """Your cancel; just before its ``boundary``-th statement the holder admits
    its signed-off order from another connection (it may be refused)."""
    with opened(path) as conn:
        claim, ops = holding_four_orders(conn, origin, supplier)
        ran = {"count": 0, "admitted": None, "unsent_key": ops["unsent"]}

        def before(sql: str) -> None:
            ran["count"] += 1
            if ran["count"] != boundary:
                return
            holder = connect(path, busy_timeout_ms=50)
            try:
                orders.admit(holder, claim, ops["unsent"], wait_s=5)
                ran["admitted"] = True
            except (PermissionError, sqlite3.OperationalError):
                ran["admitted"] = False  # stale, revoked, or locked out
            finally:
                holder.close()

        conn.set_trace_callback(before)
        try:
            ran["report"] = mod.cancel_and_settle(conn, claim.id, supplier.url)
        finally:
            conn.set_trace_callback(None)
        ran["uncertain"] = {row["operation_key"] for row in conn.execute(
            "SELECT operation_key FROM orders WHERE work_id = :work"
            f" AND status IN {sql_list(orders.UNCERTAIN)}", {"work": claim.id})}
        ran["unsent"] = status_of(conn, ops["unsent"])["status"]
    return ran


def test_the_holder_letting_an_order_out_at_any_statement_is_looked_up(
        mod, tmp_path, supplier):
    """The holder, still thinking, admits its signed-off order (SENDING: its
    request is on its way) just before each statement of your cancel in turn.
    Admitted before the cancel committed, the order may be at the supplier:
    it must be among the orders you looked up (after the fence: NOT_FOUND,
    so REVOKED). Admitted after, it is refused, and the order is revoked.
    Either way nothing is left uncertain."""
    count = statements_of(mod, tmp_path, supplier)
    assert count >= 3, (
        "the cancel ran fewer than three statements on the shop's connection:"
        " it must cancel the work, revoke the unsent orders and record the"
        f" lookups there; {count} statements")
    for boundary in range(1, count + 1):
        ran = cancel_with_the_holder_at(mod, tmp_path / f"at-{boundary}.db",
                                        f"phone:{tmp_path.name}-{boundary}",
                                        supplier, boundary)
        assert ran["uncertain"] == set(), (
            f"with the holder admitting its order before statement {boundary}"
            " of your cancel, an order was left uncertain: one admitted"
            " before the cancel committed must be looked up too;"
            f" {sorted(ran['uncertain'])}")
        assert ran["unsent"] == orders.REVOKED, (
            f"with the holder admitting its order before statement {boundary},"
            f" the order ended {ran['unsent']}, not REVOKED")
        if ran["admitted"]:
            assert ran["unsent_key"] in ran["report"]["looked_up"], (
                f"the holder's order admitted before statement {boundary} of"
                " your cancel was not looked up: the orders that may be"
                " outside must be read after the cancel committed;"
                f" looked_up = {sorted(ran['report']['looked_up'])}")


def test_the_report_says_what_the_rows_say(mod, shop, supplier):
    """``looked_up`` names every order that was uncertain, with what the
    supplier answered: the shop's rows hold the same verdicts."""
    conn, claim, ops = shop
    report = mod.cancel_and_settle(conn, claim.id, supplier.url)
    verdict = {orders.CONFIRMED: orders.CONFIRMED, orders.NOT_FOUND: orders.REVOKED}
    looked_up = set(report["looked_up"])
    expected = {ops["sent"], ops["answer_lost"], ops["in_flight"]}
    assert looked_up == expected, (
        "looked_up does not name every order that was uncertain (SENDING and"
        f" UNKNOWN): missing {sorted(expected - looked_up)}, extra"
        f" {sorted(looked_up - expected)}")
    for operation_key, answer in report["looked_up"].items():
        status = status_of(conn, operation_key)["status"]
        assert status == verdict.get(answer), (
            f"the report says the supplier answered {answer} for"
            f" {operation_key}, and the shop's row says {status}")
    generation = claims.work_row(conn, claim.id)["generation"]
    assert report["generation"] == generation, (
        "the report's generation is not the one the work row holds:"
        f" report {report['generation']}, row {generation}")
    assert json.dumps(report), (  # plain data: a caller may store it
        "the report is not plain data a caller could store as JSON")
