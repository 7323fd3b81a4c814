"""Grades exercise 06.1 (cancel_delayed.py) against a real supplier process."""

import pytest

from crashcourse import claims, fence, orders
from crashcourse.harness import Harness
from crashcourse.services import start_supplier
from crashcourse.store import opened

SENT = orders.Proposal("flour-25kg", 6, 2150)
UNSENT = orders.Proposal("rye-10kg", 2, 1800)
NEVER_ARRIVED = orders.Proposal("salt-5kg", 1, 400)


@pytest.fixture(scope="module")
def supplier(tmp_path_factory):
    db = tmp_path_factory.mktemp("s") / "sup.db"
    with Harness() as harness, start_supplier(harness, db) as running:
        yield running


@pytest.fixture
def mod(answer):
    return answer("ch06", "cancel_delayed")


def approved(conn, held, proposal):
    op_id = orders.propose(conn, held, orders.ScriptedModel(proposal))
    orders.approve(conn, op_id)
    return op_id


@pytest.fixture
def shop(tmp_path, supplier):
    """A held request: one order accepted by the supplier but not yet recorded,
    one admitted that never arrived, one approved and never sent."""
    with opened(tmp_path / "shop.db") as conn:
        orders.install(conn)
        claims.enqueue(conn, f"phone:{tmp_path.name}", "counter", "Restock flour")
        held = claims.claim(conn, "worker-a", ttl=60)
        sent, lost, unsent = (approved(conn, held, p)
                              for p in (SENT, NEVER_ARRIVED, UNSENT))
        for op_id in (sent, lost):
            orders.admit(conn, held, op_id, wait_s=5)
        status, _ = orders.post(supplier.url, sent, held, SENT, 5)
        assert status == 201
        yield conn, held, {"sent": sent, "lost": lost, "unsent": unsent}


def status_of(conn, op_id):
    return conn.execute("SELECT status, receipt FROM orders WHERE op_id = :op",
                        {"op": op_id}).fetchone()


def posts(supplier):
    with opened(supplier.db) as conn:
        return conn.execute(
            "SELECT count(*) FROM requests WHERE method = 'POST'").fetchone()[0]


def test_the_delayed_completion_is_refused(mod, shop, supplier):
    conn, held, _ = shop
    report = mod.cancel_and_settle(conn, held.id, supplier.url)
    assert report["generation"] == held.generation + 1
    with pytest.raises(fence.StaleClaim):
        fence.finish(conn, held, "DONE", "the delayed result")
    assert claims.work_row(conn, held.id)["status"] == "CANCELLED"


def test_unsent_revoked_sent_discovered_nothing_resent(mod, shop, supplier):
    conn, held, ops = shop
    before = posts(supplier)
    report = mod.cancel_and_settle(conn, held.id, supplier.url)
    assert report["revoked"] == 1
    assert status_of(conn, ops["unsent"])["status"] == "REVOKED"
    sent = status_of(conn, ops["sent"])
    assert sent["status"] == "CONFIRMED" and sent["receipt"].startswith("R-")
    assert report["looked_up"] == {ops["sent"]: "CONFIRMED", ops["lost"]: "NOT_FOUND"}
    assert posts(supplier) == before


def test_an_order_the_supplier_never_saw_stays_uncertain(mod, shop, supplier):
    conn, held, ops = shop
    mod.cancel_and_settle(conn, held.id, supplier.url)
    assert status_of(conn, ops["lost"])["status"] in orders.UNCERTAIN
    with pytest.raises(PermissionError):
        orders.send(conn, held, ops["lost"], supplier.url)
