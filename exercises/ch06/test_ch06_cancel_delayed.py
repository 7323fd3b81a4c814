"""Grades exercise 06.1 (cancel_delayed.py) against a real supplier process."""

import sqlite3

import pytest

from crashcourse import claims, fence, orders
from crashcourse.example import ScriptedModel
from crashcourse.harness import Harness
from crashcourse.services import start_supplier
from crashcourse.store import opened

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


@pytest.fixture
def shop(tmp_path, supplier):
    """A claimed request: one order accepted by the supplier but not yet
    recorded (SENDING), one accepted whose answer was lost (UNKNOWN), one
    admitted that never arrived (SENDING), one signed off and never sent."""
    with opened(tmp_path / "shop.db") as conn:
        orders.install(conn)
        claims.enqueue(conn, f"phone:{tmp_path.name}", "counter", "Restock flour")
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
        yield conn, claim, {"sent": sent, "answer_lost": answer_lost, "lost": lost,
                            "unsent": unsent}


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
