"""Orders against a real supplier process, and claims (chapters 05-06): each
test defends one guarantee against the one-line bug named in its docstring."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from crashcourse import claims
from crashcourse.claims import fence, orders
from crashcourse.lab.example import FLOUR, ScriptedModel
from crashcourse.services import supplier as supplier_client
from crashcourse.services.supplier import store as supplier_store
from crashcourse.store import immediate, opened

LEASE = 60.0


# ``conn`` (tests/conftest.py): a fresh store on each backend, with these:
pytestmark = pytest.mark.installs.with_args(orders.install)


def signed_off(conn, origin: str):
    work = claims.enqueue(conn, origin, origin, "restock flour")
    claim = claims.claim(conn, "w1", ttl=LEASE, work_id=work)
    operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
    orders.sign_off(conn, operation_key)
    return claim, operation_key


def supplier_has(supplier, operation_key: str) -> int:
    with opened(supplier.db) as sup:
        return sup.execute("SELECT count(*) FROM orders WHERE operation_key = :k",
                           {"k": operation_key}).fetchone()[0]


def test_a_wait_exactly_as_long_as_the_lease_left_is_not_admitted(conn):
    """Bug: the lease check admits a wait equal to what is left (``<=``)."""
    claim, operation_key = signed_off(conn, "phone:edge")
    with pytest.raises(orders.LeaseTooShort):
        orders.admit(conn, claim, operation_key, 2.0, now=claim.expires - 2.0)
    assert orders.order_for(conn, claim.id)["status"] == orders.SIGNED_OFF
    orders.admit(conn, claim, operation_key, 2.0, now=claim.expires - 2.001)
    order = orders.order_for(conn, claim.id)
    assert (order["status"], order["sent_generation"]) == (
        orders.SENDING, claim.generation)  # bug: the wrong claim is noted


def test_a_settled_order_is_never_changed_by_a_later_answer(conn, supplier):
    """Bug: ``record`` overwrites any status, not only an uncertain one."""
    claim, operation_key = signed_off(conn, "phone:settled")
    assert orders.send(conn, claim, operation_key, supplier.url) == orders.CONFIRMED
    receipt = orders.order_for(conn, claim.id)["receipt"]
    orders.record(conn, operation_key, orders.REJECTED)  # a late, stale answer
    order = orders.order_for(conn, claim.id)
    assert (order["status"], order["receipt"]) == (orders.CONFIRMED, receipt)
    _, unsent = signed_off(conn, "phone:unsent")
    orders.record(conn, unsent, orders.CONFIRMED, "R-forged")  # nothing was sent
    assert orders.order_for(conn, claims.work_id_for("phone:unsent"))["status"] == (
        orders.SIGNED_OFF)


def test_a_supplier_that_saw_a_newer_holder_refuses_and_says_so(conn, supplier):
    """Bug: a 412 from the supplier is recorded as an ordinary rejection."""
    claim, operation_key = signed_off(conn, "phone:newer")
    # A newer holder of the same work reached the supplier first (generation 5).
    status, _ = supplier_client.place_order(
        supplier.url, "newer-key", asdict(FLOUR), work_id=claim.id, generation=5)
    assert status == 201
    with pytest.raises(orders.StaleAtSupplier):
        orders.send(conn, claim, operation_key, supplier.url)
    assert supplier_has(supplier, operation_key) == 0
    assert orders.order_for(conn, claim.id)["status"] != orders.REJECTED


def test_a_replayed_answer_confirms_the_order(conn, supplier):
    """Bug: only 201 counts as confirmed, so the supplier's replay (200)
    reads as a rejection of an order it holds."""
    claim, operation_key = signed_off(conn, "phone:replayed")
    first, body = supplier_client.place_order(  # the earlier attempt got there
        supplier.url, operation_key, asdict(FLOUR), work_id=claim.id,
        generation=claim.generation)
    assert first == 201
    assert orders.send(conn, claim, operation_key, supplier.url) == orders.CONFIRMED
    assert orders.order_for(conn, claim.id)["receipt"] == body["receipt"]
    assert supplier_has(supplier, operation_key) == 1


def test_revoking_unsent_orders_leaves_one_that_may_have_gone_out(conn):
    """Bug: ``revoke_unsent`` revokes every order of the work."""
    claim, operation_key = signed_off(conn, "phone:revoke")
    orders.admit(conn, claim, operation_key, 1.0)  # SENDING: it may be out there
    with immediate(conn):
        assert orders.revoke_unsent(conn, claim.id) == 0
    assert orders.order_for(conn, claim.id)["status"] == orders.SENDING
    other, _ = signed_off(conn, "phone:revoke-unsent")
    with immediate(conn):
        assert orders.revoke_unsent(conn, other.id) == 1
    assert orders.order_for(conn, other.id)["status"] == orders.REVOKED


def test_the_longest_lease_allowed_can_be_granted(conn):
    """Bug: the lease bound excludes its own maximum (``<``)."""
    work = claims.enqueue(conn, "phone:long", "s", "restock")
    claim = claims.claim(conn, "w", ttl=claims.MAX_TTL, now=1000.0)
    assert (claim.id, claim.expires) == (work, 1000.0 + claims.MAX_TTL)


def test_the_same_origin_as_control_work_is_another_assignment(conn):
    """Bug: ``enqueue`` compares the assignment but not its control flag."""
    claims.enqueue(conn, "phone:flag", "s", "stop", control=False)
    with pytest.raises(claims.AssignmentConflict):
        claims.enqueue(conn, "phone:flag", "s", "stop", control=True)
    assert claims.work_row(conn, claims.work_id_for("phone:flag"))["control"] == 0


def test_a_cancelled_claim_cannot_look_an_order_up_for_a_resend(conn, supplier):
    """Bug: ``lookup`` notes the looking claim without the fence."""
    claim, operation_key = signed_off(conn, "phone:cancel-lookup")
    fence.cancel(conn, claim.id)
    with pytest.raises(fence.StaleClaim):
        orders.lookup(conn, operation_key, supplier.url, claim)
    assert orders.order_for(conn, claim.id)["checked_generation"] is None


def test_the_supplier_logs_a_lookup_of_an_unknown_key_as_not_found(tmp_path):
    """Bug: every GET is logged as answered 200, so a grader counting the
    supplier's rows sees lookups that found nothing as found."""
    path = tmp_path / "supplier.sqlite"
    supplier_store.install(path)
    with opened(path) as sup:
        assert supplier_store.lookup(sup, "no-such-key") is None
        status, _ = supplier_store.accept(sup, "k1", "work-1", 1, asdict(FLOUR))
        assert status == 201
        assert supplier_store.lookup(sup, "k1")["operation_key"] == "k1"
        logged = [(r["method"], r["operation_key"], r["answer"]) for r in sup.execute(
            "SELECT * FROM requests ORDER BY seq")]
    assert logged == [("GET", "no-such-key", 404), ("POST", "k1", 201),
                      ("GET", "k1", 200)]
