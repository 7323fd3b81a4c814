"""Agent-side orders against a real supplier process (chapter 06).

The agent's store is on both backends (``store_at``: a SQLite file, a
PostgreSQL schema, chapter 10); the cases that start a supplier of their own
to make it drop, stall or reject are about its answers, and run on SQLite.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict

import pytest

from crashcourse import claims, effects, store
from crashcourse.claims import fence, orders
from crashcourse.effects import FencingToken
from crashcourse.lab.example import FLOUR, NoNewReasoning, ScriptedModel
from crashcourse.lab.harness import Harness
from crashcourse.services import supplier as supplier_client
from crashcourse.services.supplier import store as supplier_store
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import count_rows, immediate, opened
from crashcourse.waiting import wait_until
from crashcourse.workers.shop_worker import run_once

# ``conn`` (tests/conftest.py): a fresh store on each backend, with these:
pytestmark = pytest.mark.installs.with_args(orders.install)
# A supplier of its own, made to drop, stall or reject, is about its answers.
sqlite_only = pytest.mark.sqlite_only("about the supplier's answers, not the store")




def signed_off(conn, origin="phone:1", ttl=5.0):
    work = claims.enqueue(conn, origin, origin, "restock flour")
    claim = claims.claim(conn, "w1", ttl=ttl, work_id=work)
    operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
    orders.sign_off(conn, operation_key)
    return claim, operation_key


def supplier_orders(supplier, operation_key):
    with opened(supplier.db) as conn:
        return conn.execute(
            "SELECT count(*) FROM orders WHERE operation_key = :operation_key",
            {"operation_key": operation_key}).fetchone()[0]


def test_send_confirms_and_a_replacement_needs_no_model(conn, supplier):
    claim, operation_key = signed_off(conn, "phone:send")
    assert orders.send(conn, claim, operation_key, supplier.url) == "CONFIRMED"
    assert orders.order_for(conn, claim.id)["receipt"].startswith("R-")
    assert supplier_orders(supplier, operation_key) == 1


def test_a_draft_cannot_be_sent(conn, supplier):
    claims.enqueue(conn, "phone:draft", "s", "restock flour")
    claim = claims.claim(conn, "w1", ttl=5)
    operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
    with pytest.raises(PermissionError, match="DRAFT"):
        orders.send(conn, claim, operation_key, supplier.url)
    assert supplier_orders(supplier, operation_key) == 0


def test_sign_off_takes_a_draft_once_and_readies_blocked_work(conn):
    claims.enqueue(conn, "phone:sign", "s", "restock flour")
    claim = claims.claim(conn, "w1", ttl=5)
    operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
    fence.finish(conn, claim, "BLOCKED", "waiting for sign-off")
    orders.sign_off(conn, operation_key)
    assert orders.order_for(conn, claim.id)["status"] == orders.SIGNED_OFF
    assert claims.work_row(conn, claim.id)["status"] == "READY"
    with pytest.raises(ValueError, match="DRAFT"):
        orders.sign_off(conn, operation_key)


def test_a_wait_longer_than_the_lease_is_not_admitted(conn, supplier):
    claim, operation_key = signed_off(conn, "phone:short", ttl=1.0)
    with pytest.raises(orders.LeaseTooShort):
        orders.send(conn, claim, operation_key, supplier.url, wait_s=5.0)
    assert orders.order_for(conn, claim.id)["status"] == "SIGNED_OFF"
    assert supplier_orders(supplier, operation_key) == 0


def test_a_stale_holder_cannot_send(conn, supplier):
    claim, operation_key = signed_off(conn, "phone:stale", ttl=5.0)
    fence.cancel(conn, claim.id)
    with pytest.raises(fence.StaleClaim):
        orders.send(conn, claim, operation_key, supplier.url)
    assert supplier_orders(supplier, operation_key) == 0
    assert count_rows(conn, "refusals") == 1


def test_run_once_continues_a_signed_off_order_without_the_model(conn, supplier):
    claim, operation_key = signed_off(conn, "phone:resume", ttl=0.2)
    time.sleep(max(0.0, claim.expires - store.now(conn)) + 0.01)  # real expiry
    report = run_once(conn, "replacement", supplier.url, NoNewReasoning(),
                      ttl=5.0, wait_s=2.0)
    assert report == {"work": claim.id, "generation": 2, "status": "DONE"}
    assert supplier_orders(supplier, operation_key) == 1
    proposals = [m for m in fence.transcript(conn, claim.id)
                 if m["kind"] == "proposal"]
    assert [m["generation"] for m in proposals] == [1]
    assert [m["operation_key"] for m in proposals] == [operation_key]


def test_work_without_an_order_asks_the_model_once_and_blocks(conn, supplier):
    claims.enqueue(conn, "phone:new", "s", "restock flour")
    model = ScriptedModel(FLOUR)
    report = run_once(conn, "w", supplier.url, model)
    assert report["status"] == "BLOCKED" and model.calls == 1
    with pytest.raises(AssertionError):
        NoNewReasoning().propose("anything")


@sqlite_only
def test_lost_response_is_unknown_then_looked_up_not_resent(conn, tmp_path):
    with Harness() as harness:
        dropping = start_supplier(harness, tmp_path / "sup.db", "--drop-first-response")
        claim, operation_key = signed_off(conn, "phone:lost")
        assert orders.send(conn, claim, operation_key, dropping.url) == "UNKNOWN"
        with pytest.raises(PermissionError, match="look the operation up"):
            orders.send(conn, claim, operation_key, dropping.url)
        assert orders.lookup(conn, operation_key, dropping.url, claim) == "CONFIRMED"
        dropping.stop()
    with opened(dropping.db) as sup:
        posts = sup.execute("SELECT count(*) FROM requests WHERE method = 'POST'")
        assert posts.fetchone()[0] == 1
        assert count_rows(sup, "orders") == 1
    assert orders.order_for(conn, claim.id)["status"] == "CONFIRMED"


def test_order_for_is_the_order_written_first(conn):
    """Two proposals for one work (a replacement asked again): the first
    written is the work's order, whichever key sorts first."""
    claims.enqueue(conn, "phone:two", "s", "restock flour")
    claim = claims.claim(conn, "w", ttl=5)
    second, first = sorted(
        (orders.Proposal("flour-25kg", n, 2150) for n in (6, 7, 8)),
        key=lambda p: effects.operation_key(claim.id, 1, "supplier_order",
                                            asdict(p)))[:2]
    written = [orders.propose(conn, claim, ScriptedModel(p)) for p in (first, second)]
    assert written[1] < written[0]  # so key order is not the order written
    assert orders.order_for(conn, claim.id)["operation_key"] == written[0]


def test_bad_proposal_is_refused_before_anything_is_written(conn):
    claims.enqueue(conn, "phone:bad", "s", "restock")
    claim = claims.claim(conn, "w", ttl=5)
    for bad in [("", 1, 1), ("flour", 0, 1), ("flour", 1, True), ("flour", 1.5, 2)]:
        with pytest.raises(ValueError):
            orders.propose(conn, claim, ScriptedModel(orders.Proposal(*bad)))
    assert count_rows(conn, "orders") == 0


def test_recovery_pass_takes_only_work_with_an_uncertain_order(conn):
    claims.enqueue(conn, "phone:older", "s1", "restock salt")  # oldest, no order
    # 1 s: the admission must COMMIT inside the lease (issue 29), on a loaded machine
    claim, operation_key = signed_off(conn, "phone:sent", ttl=1.0)
    orders.admit(conn, claim, operation_key, wait_s=0.1)  # SENDING, then it dies
    assert orders.claim_recovery(conn, "r", ttl=5) is None  # lease lives
    time.sleep(max(0.0, claim.expires - store.now(conn)) + 0.01)
    recovered = orders.claim_recovery(conn, "r", ttl=5)
    assert (recovered.id, recovered.generation) == (claim.id, 2)
    assert orders.claim_recovery(conn, "r2", ttl=5) is None


LEASE = 30.0  # propose and sign_off read the wall clock: leave them time


def recovery_case(conn, origin, t0, *, send=True, cancel=False, session=None):
    """Work with a signed-off order, sent (SENDING) or not, claimed at ``t0``
    (its own session, unless ``session`` names one)."""
    work = claims.enqueue(conn, origin, session or origin, "restock flour")
    claim = claims.claim(conn, "w1", ttl=LEASE, now=t0, work_id=work)
    operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
    orders.sign_off(conn, operation_key)
    if send:
        orders.admit(conn, claim, operation_key, wait_s=1.0)
    if cancel:
        fence.cancel(conn, work)
    return work


def test_claim_recovery_follows_the_chapter_06_rule(conn):
    t0 = store.now(conn)  # the lease clock: a server's own, on a server
    unsent = recovery_case(conn, "phone:unsent", t0, send=False)
    cancelled = recovery_case(conn, "phone:cancelled", t0, cancel=True)
    sending = recovery_case(conn, "phone:sending", t0)
    expired = t0 + LEASE
    # a live holder keeps it, whatever its order says
    assert orders.claim_recovery(conn, "r", ttl=5, now=expired - 0.1) is None
    recovered = orders.claim_recovery(conn, "r", ttl=5, now=expired)
    assert (recovered.id, recovered.generation) == (sending, 2)
    # a cancel is no permission to resend, and an unsent order is not recovery
    # work: the ordinary pass takes it
    assert orders.claim_recovery(conn, "r2", ttl=5, now=expired + 1) is None
    ordinary = claims.claim(conn, "o", ttl=5, now=expired + 1)
    assert ordinary.id == unsent and ordinary.id != cancelled


def test_a_cancelled_turn_never_holds_back_its_sessions_next_recovery(conn):
    """Bug: "a turn waits for its session's turns before it" counts every
    earlier turn with an uncertain order, eligible or not (on a server, the
    pick's FIRST rule without the pass's own rule): a cancelled turn, which
    may never be resent, then holds its session's next turn back for ever."""
    t0 = store.now(conn)
    cancelled = recovery_case(conn, "phone:first", t0, cancel=True, session="s")
    sending = recovery_case(conn, "phone:second", t0, session="s")
    assert claims.work_row(conn, cancelled)["status"] == claims.CANCELLED
    recovered = orders.claim_recovery(conn, "r", ttl=5, now=t0 + LEASE)
    assert recovered is not None and recovered.id == sending


def test_claim_recovery_takes_blocked_work_with_an_unknown_order(conn):
    t0 = store.now(conn)
    work = recovery_case(conn, "phone:unknown", t0)
    orders.record(conn, orders.order_for(conn, work)["operation_key"], "UNKNOWN")
    claim = claims.claim(conn, "w2", ttl=LEASE, now=t0 + LEASE, work_id=work)
    at = store.now(conn)
    fence.finish(conn, claim, "BLOCKED", "supplier outcome unknown", now=at)
    # BLOCKED waits for its retry delay, like every claim
    delay = fence.retry_delay(claim.generation)
    assert orders.claim_recovery(conn, "r", ttl=5, now=at + delay - 0.1) is None
    recovered = orders.claim_recovery(conn, "r", ttl=5, now=at + delay)
    assert (recovered.id, recovered.generation) == (work, 3)
    assert count_rows(conn, "claims") == 3


def test_the_recovery_rule_reads_the_orders_table_and_lives_in_orders():
    assert "FROM orders" in orders.RECOVERY
    assert "orders" not in claims.ORDINARY and "RECOVERY" not in dir(claims)
    for status in orders.UNCERTAIN:
        assert f"'{status}'" in orders.RECOVERY


# --- answers that decide nothing, and answers that do (issue 14) -------------


@sqlite_only
def test_a_busy_supplier_leaves_the_order_unknown_never_rejected(conn, tmp_path):
    """503 (the supplier's store is locked) decided nothing: UNKNOWN, then a
    lookup and a resend confirm it, and the supplier holds one order."""
    with Harness() as harness:
        busy = start_supplier(harness, tmp_path / "sup.db", "--busy-ms", "200")
        claim, operation_key = signed_off(conn, "phone:busy", ttl=10.0)
        with opened(busy.db) as holder:
            holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
            try:
                sent = orders.send(conn, claim, operation_key, busy.url)
            finally:
                holder.execute("ROLLBACK")
        assert sent == orders.UNKNOWN
        assert orders.order_for(conn, claim.id)["status"] == orders.UNKNOWN
        assert orders.lookup(conn, operation_key, busy.url, claim) == orders.NOT_FOUND
        assert orders.send(conn, claim, operation_key, busy.url) == orders.CONFIRMED
        busy.stop()
    assert supplier_orders(busy, operation_key) == 1


@sqlite_only
def test_a_key_in_flight_leaves_the_order_unknown_never_rejected(conn, tmp_path):
    """An earlier request with the same key is still being decided (it waits
    for the supplier's store): the second hears 409 ``in_flight`` at once,
    which decides nothing. A 409 that refuses a release is an answer."""
    with Harness() as harness:
        sup = start_supplier(harness, tmp_path / "sup.db")
        claim, operation_key = signed_off(conn, "phone:in-flight", ttl=10.0)
        answers: dict[str, object] = {}

        def ask(name: str) -> None:
            try:
                answers[name] = supplier_client.place_order(
                    sup.url, operation_key, asdict(FLOUR),
                    token=FencingToken(claim.id, 1))
            except supplier_client.NotDecided as not_decided:
                answers[name] = not_decided

        # Two requests with the key, neither told to go first: whichever the
        # supplier took first waits inside (the store is held), the other
        # hears 409 at once. The hold lasts until that 409 is heard, an
        # event, not a second guessed long enough for a request to arrive.
        askers = [threading.Thread(target=ask, args=(name,), daemon=True)
                  for name in ("one", "two")]
        with opened(sup.db) as holder:
            holder.execute("BEGIN IMMEDIATE")  # the earlier request waits inside
            try:
                for asker in askers:
                    asker.start()
                told = wait_until(lambda: next(
                    (a for a in answers.values()
                     if isinstance(a, supplier_client.NotDecided)), None),
                    30, what="a 409 for the key in flight")
                sent = orders.send(conn, claim, operation_key, sup.url)  # still held
            finally:
                holder.execute("ROLLBACK")
                for asker in askers:
                    asker.join(30)
        assert (told.status, told.retry_after) == (409, 1.0)  # not a timeout
        decided = [a for a in answers.values() if a is not told]
        assert sent == orders.UNKNOWN and decided[0][0] == 201
        assert orders.lookup(conn, operation_key, sup.url, claim) == orders.CONFIRMED
        refused = supplier_client.release_order(sup.url, operation_key, "rel-x",
                                                token=FencingToken("other-work", 1))
        assert refused[0] == 409 and refused[1]["error"] == "conflict"
        sup.stop()
    assert supplier_orders(sup, operation_key) == 1


def test_same_key_other_proposal_is_a_conflict_not_a_rejection(conn, supplier):
    claim, operation_key = signed_off(conn, "phone:conflict")
    other = {"sku": "flour-25kg", "quantity": 60, "unit_cents": 2150}
    assert supplier_client.place_order(supplier.url, operation_key, other,
                                       token=FencingToken(claim.id, 1))[0] == 201
    with pytest.raises(orders.OrderConflict):
        orders.send(conn, claim, operation_key, supplier.url)


@sqlite_only
def test_a_rejecting_supplier_is_a_final_rejection(conn, tmp_path):
    with Harness() as harness:
        rejecting = start_supplier(harness, tmp_path / "sup.db", "--reject")
        claim, operation_key = signed_off(conn, "phone:rejected")
        assert orders.send(conn, claim, operation_key, rejecting.url) == "REJECTED"
        rejecting.stop()
    assert supplier_orders(rejecting, operation_key) == 0


# --- guarantees (was tests/test_guarantees_orders.py): each test defends one
# guarantee against the one-line bug named in its docstring


def supplier_has(supplier, operation_key: str) -> int:
    with opened(supplier.db) as sup:
        return sup.execute("SELECT count(*) FROM orders WHERE operation_key = :k",
                           {"k": operation_key}).fetchone()[0]


def test_a_wait_exactly_as_long_as_the_lease_left_is_not_admitted(conn):
    """Bug: the lease check admits a wait equal to what is left (``<=``)."""
    claim, operation_key = signed_off(conn, "phone:edge", ttl=60.0)
    with pytest.raises(orders.LeaseTooShort):
        orders.admit(conn, claim, operation_key, 2.0, now=claim.expires - 2.0)
    assert orders.order_for(conn, claim.id)["status"] == orders.SIGNED_OFF
    orders.admit(conn, claim, operation_key, 2.0, now=claim.expires - 2.001)
    order = orders.order_for(conn, claim.id)
    assert (order["status"], order["sent_generation"]) == (
        orders.SENDING, claim.generation)  # bug: the wrong claim is noted


def test_a_settled_order_is_never_changed_by_a_later_answer(conn, supplier):
    """Bug: ``record`` overwrites any status, not only an uncertain one."""
    claim, operation_key = signed_off(conn, "phone:settled", ttl=60.0)
    assert orders.send(conn, claim, operation_key, supplier.url) == orders.CONFIRMED
    receipt = orders.order_for(conn, claim.id)["receipt"]
    orders.record(conn, operation_key, orders.REJECTED)  # a late, stale answer
    order = orders.order_for(conn, claim.id)
    assert (order["status"], order["receipt"]) == (orders.CONFIRMED, receipt)
    _, unsent = signed_off(conn, "phone:unsent", ttl=60.0)
    orders.record(conn, unsent, orders.CONFIRMED, "R-forged")  # nothing was sent
    assert orders.order_for(conn, claims.work_id_for("phone:unsent"))["status"] == (
        orders.SIGNED_OFF)


def test_a_supplier_that_saw_a_newer_holder_refuses_and_says_so(conn, supplier):
    """Bug: a 412 from the supplier is recorded as an ordinary rejection."""
    claim, operation_key = signed_off(conn, "phone:newer", ttl=60.0)
    # A newer holder of the same work reached the supplier first (generation 5).
    status, _ = supplier_client.place_order(
        supplier.url, "newer-key", asdict(FLOUR), token=FencingToken(claim.id, 5))
    assert status == 201
    with pytest.raises(orders.StaleAtSupplier):
        orders.send(conn, claim, operation_key, supplier.url)
    assert supplier_has(supplier, operation_key) == 0
    assert orders.order_for(conn, claim.id)["status"] != orders.REJECTED


def test_a_replayed_answer_confirms_the_order(conn, supplier):
    """Bug: only 201 counts as confirmed, so the supplier's replay (200)
    reads as a rejection of an order it holds."""
    claim, operation_key = signed_off(conn, "phone:replayed", ttl=60.0)
    first, body = supplier_client.place_order(  # the earlier attempt got there
        supplier.url, operation_key, asdict(FLOUR), token=claim.token)
    assert first == 201
    assert orders.send(conn, claim, operation_key, supplier.url) == orders.CONFIRMED
    assert orders.order_for(conn, claim.id)["receipt"] == body["receipt"]
    assert supplier_has(supplier, operation_key) == 1


def test_revoking_unsent_orders_leaves_one_that_may_have_gone_out(conn):
    """Bug: ``revoke_unsent`` revokes every order of the work."""
    claim, operation_key = signed_off(conn, "phone:revoke", ttl=60.0)
    orders.admit(conn, claim, operation_key, 1.0)  # SENDING: it may be out there
    with immediate(conn):
        assert orders.revoke_unsent(conn, claim.id) == 0
    assert orders.order_for(conn, claim.id)["status"] == orders.SENDING
    other, _ = signed_off(conn, "phone:revoke-unsent", ttl=60.0)
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
    claim, operation_key = signed_off(conn, "phone:cancel-lookup", ttl=60.0)
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


# --- two orders, not one (issue 23) ---------------------------------------------


def two_blocked_drafts(conn):
    """Two pieces of work, each with its DRAFT, both BLOCKED for sign-off."""
    made = []
    for origin in ("phone:a", "phone:b"):
        work = claims.enqueue(conn, origin, origin, "restock flour")
        claim = claims.claim(conn, "w1", ttl=5, work_id=work)
        key = orders.propose(conn, claim, ScriptedModel(FLOUR))
        fence.finish(conn, claim, "BLOCKED", "waiting for sign-off")
        made.append((claim, key))
    return made


def test_a_sign_off_readies_its_own_work_only(conn):
    """Bug: ``sign_off``'s second UPDATE without ``AND id = (the order's
    work)``: signing one order off readies every blocked work."""
    (a, key_a), (b, _) = two_blocked_drafts(conn)
    orders.sign_off(conn, key_a)
    assert claims.work_row(conn, a.id)["status"] == "READY"
    assert claims.work_row(conn, b.id)["status"] == "BLOCKED"
    assert orders.order_for(conn, b.id)["status"] == orders.DRAFT


def test_a_claim_cannot_let_out_another_work_s_order(conn):
    """Bug: ``admit`` looks the key up without ``AND work_id = :work_id``: a
    holder of one work sends another work's order under its own token."""
    (_, key_a), (_, key_b) = two_blocked_drafts(conn)
    orders.sign_off(conn, key_b)
    work_a = claims.claim(conn, "w2", ttl=5, work_id=claims.work_id_for("phone:a"))
    assert work_a is None  # A still waits for its own sign-off
    orders.sign_off(conn, key_a)
    holder_a = claims.claim(conn, "w2", ttl=5, work_id=claims.work_id_for("phone:a"))
    with pytest.raises(KeyError):
        orders.admit(conn, holder_a, key_b, 0.5)
    assert orders.order_for(conn, claims.work_id_for("phone:b"))["status"] == (
        orders.SIGNED_OFF)


def test_revoking_one_work_s_unsent_orders_leaves_the_other_s(conn):
    """Bug: ``revoke_unsent`` without ``work_id = :id``."""
    (a, _), (b, _) = two_blocked_drafts(conn)
    with immediate(conn):
        assert orders.revoke_unsent(conn, a.id) == 1
    assert orders.order_for(conn, a.id)["status"] == orders.REVOKED
    assert orders.order_for(conn, b.id)["status"] == orders.DRAFT


class Killed(Exception):
    """Stands in for the process dying at a boundary."""


def test_sending_is_committed_before_the_request_leaves(conn):
    """Bug: ``send`` without its ``after_sending_recorded`` boundary (chapter
    06 kills there): dying there leaves SENDING committed, nothing sent."""
    from crashcourse.boundary import observing

    (a, key_a), _ = two_blocked_drafts(conn)
    orders.sign_off(conn, key_a)
    holder = claims.claim(conn, "w2", ttl=5, work_id=a.id)
    heard = []

    def dies(name):
        heard.append((name, orders.order_for(conn, a.id)["status"]))
        raise Killed(name)

    with observing(dies), pytest.raises(Killed):
        orders.send(conn, holder, key_a, "http://127.0.0.1:9", wait_s=0.5)
    assert heard == [("after_sending_recorded", orders.SENDING)]


@pytest.mark.parametrize("status", [400, 500, 502])
def test_a_lookup_answered_with_neither_200_nor_404_is_not_a_look(
        conn, monkeypatch, status):
    """Bug: ``lookup`` without its ``status != 404`` refusal: an error answer
    counts as "not found", and the claim may send the order again."""
    (a, key_a), _ = two_blocked_drafts(conn)
    orders.sign_off(conn, key_a)
    holder = claims.claim(conn, "w2", ttl=5, work_id=a.id)
    orders.admit(conn, holder, key_a, 0.5)
    orders.record(conn, key_a, orders.UNKNOWN)
    monkeypatch.setattr(supplier_client, "get_order",
                        lambda *args, **kwargs: (status, {}))
    with pytest.raises(orders.ResponseLost):
        orders.lookup(conn, key_a, "http://127.0.0.1:9", holder)
    assert orders.order_for(conn, a.id)["checked_generation"] is None
    with pytest.raises(PermissionError, match="look the operation up"):
        orders.admit(conn, holder, key_a, 0.5)


def test_the_transcript_records_a_proposal_as_canonical_json(conn):
    """Bug: the transcript's proposal written with its keys in the order the
    code built them: two writers of one proposal would record two texts, and
    a replay comparing transcripts by text would see a change (canonical
    JSON: sorted keys)."""
    claims.enqueue(conn, "phone:transcript", "s", "restock flour")
    claim = claims.claim(conn, "w", ttl=5)
    operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
    text = conn.execute("SELECT message FROM transcript WHERE work_id = :id",
                        {"id": claim.id}).fetchone()[0]
    message = {"kind": "proposal", "operation_key": operation_key, **asdict(FLOUR)}
    assert text == json.dumps(message, sort_keys=True)
    assert list(json.loads(text)) == sorted(message)


def test_a_proposal_cannot_be_changed_once_made():
    """Bug: a mutable ``Proposal``: the one ``admit`` returned (the order as
    signed off) could be edited between the admission and the POST."""
    proposal = orders.Proposal("flour-25kg", 6, 2150)
    with pytest.raises(AttributeError):
        proposal.quantity = 60  # FrozenInstanceError is an AttributeError
    assert proposal == orders.Proposal("flour-25kg", 6, 2150)


@pytest.mark.parametrize("wait_s", [0, 0.0, -1.0])
def test_a_wait_of_no_time_is_not_admitted(conn, wait_s):
    """Bug: the lease check's ``0 < wait_s`` as ``0 <=``: a request that
    declares no time at all (or less) is let out, and nothing bounds when it
    lands. Tried with a lease of an hour, so only the lower bound refuses."""
    claim, operation_key = signed_off(conn, f"phone:zero{wait_s}", ttl=3600.0)
    with pytest.raises(orders.LeaseTooShort):
        orders.admit(conn, claim, operation_key, wait_s)
    assert orders.order_for(conn, claim.id)["status"] == orders.SIGNED_OFF


@pytest.mark.sqlite_only("a SQLite trigger stands in for a failure between writes")
def test_a_sign_off_that_cannot_ready_its_work_signs_nothing_off(conn):
    """Bug: ``sign_off``'s two writes outside one transaction: when readying
    the work fails (a trigger here stands in for a crash between the two),
    the order is left SIGNED_OFF with its work still BLOCKED, and nobody
    claims it to send. Both happen, or neither."""
    claims.enqueue(conn, "phone:atomic", "s", "restock flour")
    claim = claims.claim(conn, "w1", ttl=5)
    operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
    fence.finish(conn, claim, "BLOCKED", "waiting for sign-off")
    conn.execute("CREATE TEMP TRIGGER no_ready BEFORE UPDATE OF status ON work"
                 " BEGIN SELECT RAISE(ABORT, 'the second write fails'); END")
    with pytest.raises(Exception, match="the second write fails"):
        orders.sign_off(conn, operation_key)
    conn.execute("DROP TRIGGER no_ready")
    assert orders.order_for(conn, claim.id)["status"] == orders.DRAFT
    assert claims.work_row(conn, claim.id)["status"] == "BLOCKED"
