"""Grades exercise 06.1 (cancel_delayed.py) against a real supplier process."""

import sqlite3

import pytest

from crashcourse import claims
from crashcourse.claims import fence, orders
from crashcourse.lab.example import ScriptedModel
from crashcourse.lab.harness import Harness
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import connect, opened, sql_list

SENT = orders.Proposal("flour-25kg", 6, 2150)
UNSENT = orders.Proposal("rye-10kg", 2, 1800)
NEVER_ARRIVED = orders.Proposal("salt-5kg", 1, 400)
ANSWER_LOST = orders.Proposal("yeast-1kg", 3, 650)


@pytest.fixture(scope="module")
def supplier(tmp_path_factory):
    db = tmp_path_factory.mktemp("s") / "sup.db"
    with Harness() as harness, start_supplier(harness, db) as running:
        yield running


@pytest.fixture
def mod(answer):
    return answer("ch06", "cancel_delayed")


def signed_off(conn, claim, proposal):
    operation_key = orders.propose(conn, claim, ScriptedModel(proposal))
    orders.sign_off(conn, operation_key)
    return operation_key


def holding_four_orders(conn, origin, supplier):
    """A claimed request: one order accepted by the supplier but not yet
    recorded (SENDING), one accepted whose answer was lost (UNKNOWN), one
    admitted that never arrived (SENDING), one signed off and never sent."""
    orders.install(conn)
    claims.enqueue(conn, origin, "counter", "Restock flour")
    claim = claims.claim(conn, "worker-a", ttl=60)
    sent, answer_lost, lost, unsent = (
        signed_off(conn, claim, p)
        for p in (SENT, ANSWER_LOST, NEVER_ARRIVED, UNSENT))
    for operation_key in (sent, answer_lost, lost):
        orders.admit(conn, claim, operation_key, wait_s=5)
    for operation_key, proposal in ((sent, SENT), (answer_lost, ANSWER_LOST)):
        status, _ = orders.post(supplier.url, operation_key, claim, proposal, 5)
        assert status == 201
    orders.record(conn, answer_lost, orders.UNKNOWN)  # the reply never came
    return claim, {"sent": sent, "answer_lost": answer_lost, "lost": lost,
                   "unsent": unsent}


@pytest.fixture
def shop(tmp_path, supplier):
    with opened(tmp_path / "shop.db") as conn:
        claim, ops = holding_four_orders(conn, f"phone:{tmp_path.name}", supplier)
        yield conn, claim, ops


def status_of(conn, operation_key):
    return conn.execute(
        "SELECT status, receipt FROM orders WHERE operation_key = :operation_key",
        {"operation_key": operation_key}).fetchone()


def posts(supplier):
    with opened(supplier.db) as conn:
        return conn.execute(
            "SELECT count(*) FROM requests WHERE method = 'POST'").fetchone()[0]


def test_the_delayed_completion_is_refused(mod, shop, supplier):
    conn, claim, _ = shop
    report = mod.cancel_and_settle(conn, claim.id, supplier.url)
    assert report["generation"] == claim.generation + 1
    with pytest.raises(fence.StaleClaim):
        fence.finish(conn, claim, "DONE", "the delayed result")
    assert claims.work_row(conn, claim.id)["status"] == claims.CANCELLED


def test_unsent_revoked_sent_discovered_nothing_resent(mod, shop, supplier):
    conn, claim, ops = shop
    before = posts(supplier)
    report = mod.cancel_and_settle(conn, claim.id, supplier.url)
    assert report["revoked"] == 1
    assert status_of(conn, ops["unsent"])["status"] == orders.REVOKED
    for found in ("sent", "answer_lost"):  # SENDING and UNKNOWN alike
        row = status_of(conn, ops[found])
        assert row["status"] == orders.CONFIRMED and row["receipt"].startswith("R-")
    assert report["looked_up"] == {ops["sent"]: orders.CONFIRMED,
                                   ops["answer_lost"]: orders.CONFIRMED,
                                   ops["lost"]: orders.NOT_FOUND}
    assert posts(supplier) == before


def test_an_order_the_supplier_never_saw_stays_uncertain(mod, shop, supplier):
    conn, claim, ops = shop
    mod.cancel_and_settle(conn, claim.id, supplier.url)
    assert status_of(conn, ops["lost"])["status"] in orders.UNCERTAIN
    with pytest.raises(PermissionError):
        orders.send(conn, claim, ops["lost"], supplier.url)


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
            mod.cancel_and_settle(conn, claim.id, supplier.url)
    finally:
        conn.set_authorizer(None)
    cancelled = claims.work_row(conn, claim.id)["status"] == claims.CANCELLED
    revoked = status_of(conn, ops["unsent"])["status"] == orders.REVOKED
    assert cancelled == revoked


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
        ran = {"count": 0, "admitted": None}

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
    it must be among the orders you looked up. Admitted after, it is refused,
    and the order is revoked. Either way nothing is left uncertain unasked."""
    count = statements_of(mod, tmp_path, supplier)
    assert count >= 3
    for boundary in range(1, count + 1):
        ran = cancel_with_the_holder_at(mod, tmp_path / f"at-{boundary}.db",
                                        f"phone:{tmp_path.name}-{boundary}",
                                        supplier, boundary)
        assert ran["uncertain"] <= set(ran["report"]["looked_up"]), boundary
        if ran["admitted"]:
            assert ran["unsent"] in orders.UNCERTAIN, boundary
        else:
            assert ran["unsent"] == orders.REVOKED, boundary
