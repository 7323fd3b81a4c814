"""Agent-side orders against a real supplier process (chapter 06)."""

from __future__ import annotations

import time

import pytest

from crashcourse import claims, fence, orders
from crashcourse.harness import Harness
from crashcourse.services import start_supplier
from crashcourse.store import count_rows, opened
from crashcourse.workers.shop_worker import FLOUR, run_once


@pytest.fixture
def conn(tmp_path):
    with opened(tmp_path / "agent.db") as conn:
        orders.install(conn)
        yield conn


def approved(conn, origin="phone:1", ttl=5.0):
    work = claims.enqueue(conn, origin, origin, "restock flour")
    held = claims.claim(conn, "w1", ttl=ttl, work_id=work)
    op_id = orders.propose(conn, held, orders.ScriptedModel(FLOUR))
    orders.approve(conn, op_id)
    return held, op_id


def supplier_orders(supplier, op_id):
    with opened(supplier.db) as conn:
        return conn.execute("SELECT count(*) FROM orders WHERE op_id = :op",
                            {"op": op_id}).fetchone()[0]


def test_send_confirms_and_a_replacement_needs_no_model(conn, supplier):
    held, op_id = approved(conn, "phone:send")
    assert orders.send(conn, held, op_id, supplier.url) == "CONFIRMED"
    assert orders.order_for(conn, held.id)["receipt"].startswith("R-")
    assert supplier_orders(supplier, op_id) == 1


def test_a_draft_cannot_be_sent(conn, supplier):
    claims.enqueue(conn, "phone:draft", "s", "restock flour")
    held = claims.claim(conn, "w1", ttl=5)
    op_id = orders.propose(conn, held, orders.ScriptedModel(FLOUR))
    with pytest.raises(PermissionError, match="DRAFT"):
        orders.send(conn, held, op_id, supplier.url)
    assert supplier_orders(supplier, op_id) == 0


def test_a_wait_longer_than_the_lease_is_not_admitted(conn, supplier):
    held, op_id = approved(conn, "phone:short", ttl=1.0)
    with pytest.raises(orders.LeaseTooShort):
        orders.send(conn, held, op_id, supplier.url, wait_s=5.0)
    assert orders.order_for(conn, held.id)["status"] == "APPROVED"
    assert supplier_orders(supplier, op_id) == 0


def test_a_stale_holder_cannot_send(conn, supplier):
    held, op_id = approved(conn, "phone:stale", ttl=5.0)
    fence.cancel(conn, held.id)
    with pytest.raises(fence.StaleClaim):
        orders.send(conn, held, op_id, supplier.url)
    assert supplier_orders(supplier, op_id) == 0
    assert count_rows(conn, "refusals") == 1


def test_run_once_continues_an_approved_order_without_the_model(conn, supplier):
    held, op_id = approved(conn, "phone:resume", ttl=0.2)
    time.sleep(max(0.0, held.expires - time.time()) + 0.01)  # real expiry
    report = run_once(conn, "replacement", supplier.url, orders.NoNewReasoning(),
                      ttl=5.0, wait_s=2.0)
    assert report == {"work": held.id, "generation": 2, "status": "DONE"}
    assert supplier_orders(supplier, op_id) == 1
    proposals = [m for m in fence.transcript(conn, held.id) if m["kind"] == "proposal"]
    assert [m["generation"] for m in proposals] == [1]


def test_work_without_an_order_asks_the_model_once_and_blocks(conn, supplier):
    claims.enqueue(conn, "phone:new", "s", "restock flour")
    model = orders.ScriptedModel(FLOUR)
    report = run_once(conn, "w", supplier.url, model)
    assert report["status"] == "BLOCKED" and model.calls == 1
    with pytest.raises(AssertionError):
        orders.NoNewReasoning().propose("anything")


def test_lost_response_is_unknown_then_looked_up_not_resent(conn, tmp_path):
    with Harness() as harness:
        dropping = start_supplier(harness, tmp_path / "sup.db", "--drop-first-response")
        held, op_id = approved(conn, "phone:lost")
        assert orders.send(conn, held, op_id, dropping.url) == "UNKNOWN"
        with pytest.raises(PermissionError, match="look the operation up"):
            orders.send(conn, held, op_id, dropping.url)
        assert orders.lookup(conn, op_id, dropping.url, held) == "CONFIRMED"
        dropping.stop()
    with opened(dropping.db) as sup:
        posts = sup.execute("SELECT count(*) FROM requests WHERE method = 'POST'")
        assert posts.fetchone()[0] == 1
        assert count_rows(sup, "orders") == 1
    assert orders.order_for(conn, held.id)["status"] == "CONFIRMED"


def test_bad_proposal_is_refused_before_anything_is_written(conn):
    claims.enqueue(conn, "phone:bad", "s", "restock")
    held = claims.claim(conn, "w", ttl=5)
    for bad in [("", 1, 1), ("flour", 0, 1), ("flour", 1, True), ("flour", 1.5, 2)]:
        with pytest.raises(ValueError):
            orders.propose(conn, held, orders.ScriptedModel(orders.Proposal(*bad)))
    assert count_rows(conn, "orders") == 0


def test_recovery_pass_takes_only_work_with_an_uncertain_order(conn):
    claims.enqueue(conn, "phone:older", "s1", "restock salt")  # oldest, no order
    held, op_id = approved(conn, "phone:sent", ttl=0.2)
    orders.admit(conn, held, op_id, wait_s=0.1)  # SENDING, then the holder dies
    assert claims.claim(conn, "r", ttl=5, recovery_only=True) is None  # lease lives
    time.sleep(max(0.0, held.expires - time.time()) + 0.01)
    recovered = claims.claim(conn, "r", ttl=5, recovery_only=True)
    assert (recovered.id, recovered.generation) == (held.id, 2)
    assert claims.claim(conn, "r2", ttl=5, recovery_only=True) is None
