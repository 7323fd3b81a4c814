"""A cancel reaches the supplier (chapter 06, issue 29).

The supplier fences by generation: ``POST /work/{id}/fence`` raises a work's
fence to the cancel's generation, and from that commit on every order or
release of a lower generation is refused (412). ``orders.settle_cancelled``
raises it before it looks anything up, so the NOT_FOUND it hears is final.

The reproduction (review 2026-12-02, chapters 05-08 finding 6): a real shop
worker admitted (SENDING) and frozen by SIGSTOP; the person cancels and
settles; the worker is thawed and POSTs. Graded from the rows: the
supplier's ``orders`` and ``requests`` and the agent's ``work`` and
``orders``; never the worker's exit status or its report.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from crashcourse import claims
from crashcourse.claims import fence, orders
from crashcourse.effects import FencingToken
from crashcourse.lab.harness import Harness
from crashcourse.services import supplier as supplier_client
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import count_rows, immediate, opened, sql_list

FLOUR = {"sku": "flour-25kg", "quantity": 6, "unit_cents": 2150}


def post(url, key, work, generation):
    """The status a POST of FLOUR under ``key`` gets (a 412 is an answer)."""
    return supplier_client.place_order(url, key, FLOUR,
                                       token=FencingToken(work, generation))[0]


def raw_fence(url, work, headers, data=b""):
    request = urllib.request.Request(f"{url}/work/{work}/fence", method="POST",
                                     data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as answered:
        return answered.code, json.loads(answered.read())


def test_a_fence_refuses_every_lower_generation_from_its_commit_on(supplier):
    assert post(supplier.url, "fence-early", "work-f", 1) == 201
    assert supplier_client.fence_work(supplier.url, FencingToken("work-f", 3)) == 3
    assert post(supplier.url, "fence-late", "work-f", 2) == 412  # a new order
    assert post(supplier.url, "fence-early", "work-f", 1) == 412  # a replay too
    status, _ = supplier_client.release_order(
        supplier.url, "fence-early", "fence-release",
        token=FencingToken("work-f", 2))
    assert status == 412
    never_lower = supplier_client.fence_work(supplier.url, FencingToken("work-f", 2))
    assert never_lower == 3
    with opened(supplier.db) as conn:
        placed = conn.execute("SELECT operation_key FROM orders"
                              " WHERE work_id = 'work-f'").fetchall()
        fences = conn.execute("SELECT generation, answer FROM requests"
                              " WHERE method = 'FENCE' AND work_id = 'work-f'"
                              " ORDER BY seq").fetchall()
    assert [row[0] for row in placed] == ["fence-early"]  # decided before it
    assert [tuple(row) for row in fences] == [(3, 200), (2, 200)]


@pytest.mark.parametrize("headers, data", [
    ({}, b""),  # no generation
    ({"X-Generation": "0"}, b""),
    ({"X-Generation": "²"}, b""),
    ({"X-Generation": "4"}, b"{}"),  # a fence carries no body
])
def test_a_malformed_fence_is_400_and_raises_nothing(supplier, headers, data):
    with opened(supplier.db) as conn:
        before = count_rows(conn, "fences")
    status, answer = raw_fence(supplier.url, "work-bad", headers, data)
    assert status == 400 and answer["error"] == "bad_request"
    with opened(supplier.db) as conn:
        assert count_rows(conn, "fences") == before
        assert conn.execute("SELECT count(*) FROM fences WHERE work_id ="
                            " 'work-bad'").fetchone()[0] == 0


# --- a real worker, frozen after its admission ------------------------------


def old_settle(conn, work_id, url):
    """The chapter's procedure before issue 29 (the negative control): cancel
    and revoke in one transaction, then look up, never reaching the
    supplier's fence: its NOT_FOUND leaves the order SENDING."""
    with immediate(conn):
        fence.cancel_locked(conn, work_id, time.time())
        orders.revoke_unsent(conn, work_id)
    uncertain = conn.execute(
        "SELECT operation_key FROM orders WHERE work_id = :id"
        f" AND status IN {sql_list(orders.UNCERTAIN)}", {"id": work_id}).fetchall()
    return {key: orders.lookup(conn, key, url) for (key,) in uncertain}


def new_settle(conn, work_id, url):
    """The runtime's: cancel and revoke, then ``settle_cancelled``."""
    with immediate(conn):
        fence.cancel_locked(conn, work_id, time.time())
        orders.revoke_unsent(conn, work_id)
    return orders.settle_cancelled(conn, work_id, url)


def frozen_after_admission(tmp_path, settle):
    """A shop worker admitted (SENDING), frozen by SIGSTOP; ``settle`` runs;
    the worker is thawed and goes on to POST. The rows afterwards."""
    db = tmp_path / "shop.db"
    with opened(db) as conn:
        orders.install(conn)
        work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    with Harness() as harness, \
            start_supplier(harness, tmp_path / "supplier.db") as supplier:
        worker = harness.start(
            ["-m", "crashcourse.workers.shop_worker", "send", "--db", str(db),
             "--url", supplier.url, "--ttl", "30", "--wait", "10", "--work", work],
            stop_at="after_sending_recorded")
        worker.wait_for_boundary()  # SENDING is committed; nothing sent yet
        worker.freeze()
        worker.release()  # read once it runs again
        with opened(db) as conn:
            assert orders.order_for(conn, work)["status"] == orders.SENDING
            settled = settle(conn, work, supplier.url)
        worker.thaw()
        worker.finish()
        with opened(supplier.db) as remote:
            answers = [row[0] for row in remote.execute(
                "SELECT answer FROM requests WHERE method = 'POST'"
                " AND work_id = :w ORDER BY seq", {"w": work})]
            placed = remote.execute("SELECT count(*) FROM orders WHERE work_id"
                                    " = :w", {"w": work}).fetchone()[0]
    with opened(db) as conn:
        row = claims.work_row(conn, work)
        order = orders.order_for(conn, work)
    return {"settled": list(settled.values()), "post_answers": answers,
            "placed": placed, "work": row["status"], "order": order["status"]}


def test_a_frozen_holder_s_late_post_is_refused_once_the_cancel_fenced_it(
        tmp_path):
    """Bug (issue 29): the thawed holder's POST is accepted (201) after the
    cancel, and the worker records CONFIRMED on CANCELLED work."""
    rows = frozen_after_admission(tmp_path, new_settle)
    assert rows == {"settled": [orders.REVOKED], "post_answers": [412],
                    "placed": 0, "work": claims.CANCELLED,
                    "order": orders.REVOKED}


def test_without_the_fence_the_same_freeze_places_an_order_for_cancelled_work(
        tmp_path):
    """The negative control at the same barrier: the lookup-only settlement
    hears NOT_FOUND, the thawed POST is accepted and the order CONFIRMED."""
    rows = frozen_after_admission(tmp_path, old_settle)
    assert rows == {"settled": [orders.NOT_FOUND], "post_answers": [201],
                    "placed": 1, "work": claims.CANCELLED,
                    "order": orders.CONFIRMED}


# --- settling without a worker ------------------------------------------------


def cancelled_sending(conn) -> tuple[str, str]:
    """Work whose order was admitted (SENDING), then cancelled: the POST never
    left (its holder died)."""
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    claim = claims.claim(conn, "w", ttl=30)
    key = orders.propose(conn, claim, _Scripted())
    orders.sign_off(conn, key)
    orders.admit(conn, claim, key, 1.0)
    with immediate(conn):
        fence.cancel_locked(conn, work, time.time())
    return work, key


class _Scripted:
    def propose(self, prompt):
        return orders.Proposal(**FLOUR)


def test_settlement_waits_for_the_fence_and_sweeps_what_it_could_not_settle(
        tmp_path):
    """Bug: a cancelled order left SENDING forever (recovery never claims
    cancelled work). With the supplier down nothing is decided and the order
    stays SENDING; once it is up, the sweep fences and settles it."""
    with opened(tmp_path / "shop.db") as conn:
        orders.install(conn)
        work, key = cancelled_sending(conn)
        assert orders.settle_all_cancelled(conn, "http://127.0.0.1:9",
                                           wait_s=1) == {}
        assert orders.order_for(conn, work)["status"] == orders.SENDING
        with Harness() as harness, \
                start_supplier(harness, tmp_path / "supplier.db") as supplier:
            assert orders.settle_all_cancelled(conn, supplier.url) == {
                work: {key: orders.REVOKED}}
            assert orders.settle_all_cancelled(conn, supplier.url) == {}
            assert post(supplier.url, key, work, 1) == 412  # never placed now
        with pytest.raises(ValueError, match="not cancelled"):
            other = claims.enqueue(conn, "phone:rye", "counter", "Restock rye")
            orders.settle_cancelled(conn, other, "http://127.0.0.1:9")


def test_the_replacement_s_pass_settles_cancelled_work_first(tmp_path):
    """Bug: ``run_once`` claims only READY or lapsed work, so a cancelled
    work's SENDING order is never looked at again."""
    from crashcourse.lab.example import NoNewReasoning
    from crashcourse.workers.shop_worker import run_once

    with opened(tmp_path / "shop.db") as conn:
        orders.install(conn)
        work, key = cancelled_sending(conn)
        with Harness() as harness, \
                start_supplier(harness, tmp_path / "supplier.db") as supplier:
            assert run_once(conn, "replacement", supplier.url,
                            NoNewReasoning()) is None  # nothing to claim
            assert post(supplier.url, key, work, 1) == 412
        assert orders.order_for(conn, work)["status"] == orders.REVOKED
        assert claims.work_row(conn, work)["status"] == claims.CANCELLED
