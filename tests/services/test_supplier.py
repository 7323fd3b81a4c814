"""The supplier is a real HTTP server process with its own database (chapter 06)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from crashcourse.lab.harness import Harness
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import count_rows, opened
from crashcourse.waiting import wait_until
from tests.lock_probe import second_writer_got_in

FLOUR = {"sku": "flour-25kg", "quantity": 6, "unit_cents": 2150}


def post(url, body, key="op-1", work="work-a", generation="1", raw=None):
    headers = {"Content-Type": "application/json", "Idempotency-Key": key,
               "X-Work-Id": work, "X-Generation": generation}
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}/orders", data=data, headers=headers,
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as answered:
        return answered.code, json.loads(answered.read())


def get(url, key):
    try:
        with urllib.request.urlopen(f"{url}/orders/{key}", timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as answered:
        return answered.code, json.loads(answered.read())


def orders_in(db):
    with opened(db) as conn:
        return count_rows(conn, "orders")


def test_same_key_same_proposal_replays_the_receipt(supplier):
    first = post(supplier.url, FLOUR, key="replay")
    again = post(supplier.url, FLOUR, key="replay")
    assert first[0] == 201 and again[0] == 200
    assert again[1]["receipt"] == first[1]["receipt"]
    assert get(supplier.url, "replay") == (200, first[1])
    assert first[1]["operation_key"] == "replay"  # the JSON field names the key


def test_the_operation_key_is_the_column_in_orders_and_requests(supplier):
    post(supplier.url, FLOUR, key="columns")
    get(supplier.url, "columns")
    with opened(supplier.db) as conn:
        stored = conn.execute(
            "SELECT count(*) FROM orders WHERE operation_key = 'columns'"
        ).fetchone()[0]
        asked = conn.execute(
            "SELECT method FROM requests WHERE operation_key = 'columns' ORDER BY seq"
        ).fetchall()
    assert stored == 1
    assert [row["method"] for row in asked] == ["POST", "GET"]


def answers_logged(db, key):
    with opened(db) as conn:
        return [(r["method"], r["answer"]) for r in conn.execute(
            "SELECT method, answer FROM requests WHERE operation_key = :key"
            " ORDER BY seq", {"key": key})]


def test_same_key_other_proposal_is_422_as_the_draft_says(supplier):
    post(supplier.url, FLOUR, key="conflict")
    before = orders_in(supplier.db)
    status, body = post(supplier.url, {**FLOUR, "quantity": 60}, key="conflict")
    assert (status, body["error"], body["operation_key"]) == (422, "conflict",
                                                             "conflict")
    assert orders_in(supplier.db) == before
    assert answers_logged(supplier.db, "conflict") == [("POST", 201), ("POST", 422)]


def test_a_replay_by_a_newer_generation_raises_the_fence(supplier):
    assert post(supplier.url, FLOUR, key="fence-r", work="work-fr")[0] == 201
    replay = post(supplier.url, FLOUR, key="fence-r", work="work-fr", generation="2")
    assert replay[0] == 200 and replay[1]["generation"] == 1  # the original receipt
    late = post(supplier.url, {**FLOUR, "quantity": 7}, key="fence-late",
                work="work-fr", generation="1")
    assert (late[0], late[1]["highest"]) == (412, 2)
    assert get(supplier.url, "fence-late")[0] == 404


def test_unknown_operation_lookup_is_404(supplier):
    assert get(supplier.url, "never-sent") == (404, {"error": "not_found",
                                                    "operation_key": "never-sent"})


@pytest.mark.parametrize("body, raw, generation", [
    ({**FLOUR, "quantity": 0}, None, "1"),
    ({**FLOUR, "quantity": True}, None, "1"),
    ({**FLOUR, "unit_cents": 2.5}, None, "1"),
    ({"sku": "flour"}, None, "1"),
    ({**FLOUR, "extra": 1}, None, "1"),
    ({**FLOUR, "sku": " "}, None, "1"),
    (None, b"{not json", "1"),
    (None, b"[1, 2]", "1"),
    (FLOUR, None, "0"),
    (FLOUR, None, "-3"),
    (FLOUR, None, "two"),
])
def test_malformed_input_is_400_and_no_order_stored(supplier, body, raw, generation):
    before = orders_in(supplier.db)
    logged = answers_logged(supplier.db, "bad")
    status, answer = post(supplier.url, body, key="bad", raw=raw,
                          generation=generation)
    assert (status, answer["error"]) == (400, "bad_request")
    assert orders_in(supplier.db) == before
    # the request named a key: the log says it came and what it was told
    assert answers_logged(supplier.db, "bad") == [*logged, ("POST", 400)]


def test_lower_generation_is_refused_at_the_resource(supplier):
    assert post(supplier.url, FLOUR, key="g2", work="work-f", generation="2")[0] == 201
    status, body = post(supplier.url, {**FLOUR, "quantity": 7}, key="g1",
                        work="work-f", generation="1")
    assert (status, body["error"], body["highest"]) == (412, "stale_generation", 2)
    assert get(supplier.url, "g1")[0] == 404


def test_the_no_fence_mutant_accepts_the_stale_generation(tmp_path):
    with Harness() as harness:
        mutant = start_supplier(harness, tmp_path / "sup.db", "--no-fence")
        post(mutant.url, FLOUR, key="g2", work="w", generation="2")
        status, _ = post(mutant.url, {**FLOUR, "quantity": 7}, key="g1", work="w",
                         generation="1")
        mutant.stop()
    assert status == 201 and orders_in(mutant.db) == 2


def test_dropped_response_still_commits(tmp_path):
    with Harness() as harness:
        dropping = start_supplier(harness, tmp_path / "sup.db", "--drop-first-response")
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            post(dropping.url, FLOUR, key="lost")
        assert get(dropping.url, "lost")[0] == 200
        assert post(dropping.url, FLOUR, key="lost")[0] == 200  # the replay answers
        dropping.stop()
    assert orders_in(dropping.db) == 1


def test_until_next_holds_the_first_post_until_a_later_one_is_decided(tmp_path):
    """Chapter 06's fenced_at_supplier made by an event (issue 36): the first
    POST (generation 1) is held, however long the later one (generation 2)
    takes to come, until that one is decided; then it is refused as stale.
    Its sender has long given up (its wait ran out): as the chapter's child."""
    with Harness() as harness:
        held = start_supplier(harness, tmp_path / "sup.db", "--hold-first", "60",
                              "--until-next")
        gave_up = threading.Thread(target=lambda: post_quietly(held.url, "w", "1"))
        gave_up.start()
        gave_up.join(30)
        # its sender waited 0.5 s: the supplier has taken it as the first POST
        # (a handler thread later than that is the one timing left here)
        assert answers_logged(held.db, "op-w") == []  # the held one is undecided
        assert post(held.url, FLOUR, key="op-w2", work="w", generation="2")[0] == 201
        wait_until(lambda: answers_logged(held.db, "op-w") != [], 30,
                   what="the held first POST decided")
        held.stop()
    assert answers_logged(held.db, "op-w") == [("POST", 412)]
    with opened(held.db) as conn:  # decided in that order: generation 2 first
        assert [r["generation"] for r in conn.execute(
            "SELECT generation FROM requests WHERE method = 'POST' ORDER BY seq")
                ] == [2, 1]


def test_until_next_is_bounded_by_the_hold(tmp_path):
    """No later POST comes: the held one is decided once its bound runs out."""
    with Harness() as harness:
        held = start_supplier(harness, tmp_path / "sup.db", "--hold-first", "0.5",
                              "--until-next")
        began = time.monotonic()
        assert post(held.url, FLOUR, key="alone", work="w")[0] == 201
        assert time.monotonic() - began >= 0.5  # held for its bound, no less
        held.stop()


def post_quietly(url, work, generation):
    """A POST whose sender gives up after 0.5 s (its own wait)."""
    headers = {"Content-Type": "application/json", "Idempotency-Key": f"op-{work}",
               "X-Work-Id": work, "X-Generation": generation}
    request = urllib.request.Request(f"{url}/orders", data=json.dumps(FLOUR).encode(),
                                     headers=headers, method="POST")
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        urllib.request.urlopen(request, timeout=0.5)


def test_reject_switch_stores_no_order_and_logs_its_answer(tmp_path):
    with Harness() as harness:
        rejecting = start_supplier(harness, tmp_path / "sup.db", "--reject")
        assert post(rejecting.url, FLOUR, key="r") == (403, {"error": "rejected"})
        rejecting.stop()
    assert orders_in(rejecting.db) == 0
    assert answers_logged(rejecting.db, "r") == [("POST", 403)]


# --- the release of chapter 08: a compensation with its own key --------------


def release(url, order_key, key, work="work-r", generation="2"):
    headers = {"Idempotency-Key": key, "X-Work-Id": work,
               "X-Generation": generation}
    request = urllib.request.Request(f"{url}/orders/{order_key}/release", data=b"",
                                     headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as answered:
        return answered.code, json.loads(answered.read())


def rows_of(db, table, key_column, key):
    with opened(db) as conn:
        return [dict(r) for r in conn.execute(
            f"SELECT * FROM {table} WHERE {key_column} = :key", {"key": key})]


def test_a_release_is_idempotent_by_its_own_key(supplier):
    post(supplier.url, FLOUR, key="held", work="work-r")
    first = release(supplier.url, "held", "release-held")
    again = release(supplier.url, "held", "release-held")
    assert (first[0], again[0]) == (201, 200) and first[1] == again[1]
    assert first[1] == {"operation_key": "release-held", "released": "held",
                        "generation": 2}
    assert len(rows_of(supplier.db, "releases", "order_key", "held")) == 1
    asked = rows_of(supplier.db, "requests", "operation_key", "release-held")
    assert [(r["method"], r["answer"]) for r in asked] == [("POST", 201),
                                                          ("POST", 200)]
    assert get(supplier.url, "held")[0] == 200  # the order itself stays


@pytest.mark.parametrize("order_key, key, work, status", [
    ("held-2", "release-other", "work-r2", 409),  # released under another key
    ("held-3", "release-held-2", "work-r2", 422),  # the key names another release
    ("held-3", "release-held-3", "someone-else", 409),  # other work's order
    ("never-placed", "release-never", "work-r2", 404),
])
def test_a_release_that_cannot_be_is_refused_and_stores_nothing(
        supplier, order_key, key, work, status):
    for placed in ("held-2", "held-3"):
        post(supplier.url, FLOUR, key=placed, work="work-r2")
    release(supplier.url, "held-2", "release-held-2", work="work-r2")
    with opened(supplier.db) as conn:
        before = count_rows(conn, "releases")
    answered, body = release(supplier.url, order_key, key, work=work)
    assert answered == status and "error" in body
    with opened(supplier.db) as conn:
        assert count_rows(conn, "releases") == before


@pytest.mark.parametrize("headers, logged", [
    ({"X-Work-Id": "w", "X-Generation": "1"}, 0),  # no key: nothing to log under
    ({"Idempotency-Key": "k", "X-Generation": "1"}, 1),
    ({"Idempotency-Key": "k", "X-Work-Id": "w", "X-Generation": "0"}, 1),
])
def test_a_malformed_release_is_400_and_releases_nothing(supplier, headers, logged):
    post(supplier.url, FLOUR, key="held-4", work="w")
    with opened(supplier.db) as conn:
        before = (count_rows(conn, "releases"), count_rows(conn, "requests"))
    request = urllib.request.Request(f"{supplier.url}/orders/held-4/release",
                                     data=b"", headers=headers, method="POST")
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(request, timeout=5)
    assert answered.value.code == 400
    with opened(supplier.db) as conn:
        assert (count_rows(conn, "releases"), count_rows(conn, "requests")) == (
            before[0], before[1] + logged)


def test_a_replayed_release_by_a_newer_generation_raises_the_fence(supplier):
    post(supplier.url, FLOUR, key="held-6", work="work-f6")
    assert release(supplier.url, "held-6", "release-6", work="work-f6",
                   generation="1")[0] == 201
    assert release(supplier.url, "held-6", "release-6", work="work-f6",
                   generation="3")[0] == 200
    late = post(supplier.url, {**FLOUR, "quantity": 7}, key="late-6",
                work="work-f6", generation="2")
    assert (late[0], late[1]["highest"]) == (412, 3)


def test_a_release_raises_the_fence_against_a_late_order(supplier):
    post(supplier.url, FLOUR, key="held-5", work="work-f5", generation="2")
    assert release(supplier.url, "held-5", "release-5", work="work-f5",
                   generation="5")[0] == 201
    late = post(supplier.url, {**FLOUR, "quantity": 7}, key="late-5", work="work-f5",
                generation="3")
    assert (late[0], late[1]["highest"]) == (412, 5)
    stale = release(supplier.url, "held-5", "release-5", work="work-f5",
                    generation="4")
    assert stale[0] == 412


def test_a_refusal_s_answer_says_what_was_wrong():
    """Bug: ``request.Refused`` without its message: a 400 whose detail is
    blank leaves the client guessing which header or field was refused."""
    from crashcourse.services.supplier.request import Refused

    refused = Refused("X-Generation must be sent once, got 2")
    assert refused.body() == {"error": "bad_request",
                              "detail": "X-Generation must be sent once, got 2"}
    assert (refused.status, refused.retry) == (400, False)


def test_a_post_is_decided_under_the_supplier_s_write_lock(tmp_path, monkeypatch):
    """Bug: ``store.accept`` out of its ``immediate`` block: the fence read,
    the order and the log interleave with another POST's, so a stale
    generation can pass a fence that a newer one is raising. When the fence
    has been read, a second writer tries the lock: it never may get it."""
    from crashcourse.services.supplier import store as supplier_store

    db = tmp_path / "supplier.sqlite"
    supplier_store.install(db)
    proposal = {"sku": "flour-25kg", "quantity": 6, "unit_cents": 2150}
    statuses = []
    got_in = second_writer_got_in(
        db, monkeypatch, supplier_store, "fence_of",
        lambda conn: statuses.append(
            supplier_store.accept(conn, "op-1", "work-a", 1, proposal)[0]))
    assert statuses == [201] and not got_in


# --- the store's decisions, called directly (issue 23: vary every input) -----


@pytest.fixture
def store(tmp_path):
    """The supplier's own store module and one connection to an installed file."""
    from crashcourse.services.supplier import store as supplier_store

    db = tmp_path / "supplier.sqlite"
    supplier_store.install(db)
    with opened(db) as conn:
        yield supplier_store, conn


def logged_answers(conn, key):
    return [(r["method"], r["answer"]) for r in conn.execute(
        "SELECT method, answer FROM requests WHERE operation_key = :key"
        " ORDER BY seq", {"key": key})]


def test_the_store_s_accept_is_fenced_unless_told_otherwise(store):
    """Bug: ``accept``'s default ``fence=False``: chapter 06 prints this
    function as the fenced one; called as printed it let a stale generation
    place an order. The fence is per work and admits its own generation."""
    supplier_store, conn = store
    assert supplier_store.accept(conn, "g3", "work-a", 3, FLOUR)[0] == 201
    stale = supplier_store.accept(conn, "g2", "work-a", 2, {**FLOUR, "quantity": 7})
    assert stale == (412, {"error": "stale_generation", "highest": 3})
    assert supplier_store.accept(conn, "g3b", "work-a", 3, FLOUR)[0] == 201
    assert supplier_store.accept(conn, "g1", "work-b", 1, FLOUR)[0] == 201
    assert supplier_store.find_order(conn, "g2") is None
    assert logged_answers(conn, "g2") == [("POST", 412)]
    unfenced = supplier_store.accept(conn, "g2", "work-a", 2, FLOUR, fence=False)
    assert unfenced[0] == 201  # the mutant chapter 06 shows losing


@pytest.mark.parametrize("first, second", [
    (FLOUR, {**FLOUR, "quantity": 6.0}),
    (FLOUR, {**FLOUR, "unit_cents": 2150.0}),
    ({**FLOUR, "quantity": 1}, {**FLOUR, "quantity": True}),
    (FLOUR, {**FLOUR, "sku": "Flour-25kg"}),
    (FLOUR, {**FLOUR, "quantity": 7}),
], ids=["int-float", "cents-float", "true-for-1", "sku-case", "quantity"])
def test_a_replay_must_be_the_same_json_not_an_equal_python_value(store, first,
                                                                  second):
    """Python's ``==`` says 6 == 6.0 and True == 1; canonical JSON does not.
    A replay compared as Python values would answer a different request
    with the first one's receipt; it is 422 and stores nothing."""
    supplier_store, conn = store
    assert supplier_store.accept(conn, "k", "work-a", 1, first)[0] == 201
    again = supplier_store.accept(conn, "k", "work-a", 1, second)
    assert again == (422, {"error": "conflict", "operation_key": "k"})
    assert supplier_store.accept(conn, "k", "work-a", 1, dict(first))[0] == 200
    assert [r[0] for r in conn.execute("SELECT operation_key FROM orders")] == ["k"]


def test_each_new_order_gets_its_own_receipt_and_a_replay_the_first(store):
    supplier_store, conn = store
    receipts = [supplier_store.accept(conn, key, "work-a", 1, FLOUR)[1]["receipt"]
                for key in ("a", "b", "a", "c")]
    assert receipts == ["R-00001", "R-00002", "R-00001", "R-00003"]


def test_a_lookup_logs_what_it_answered(store):
    supplier_store, conn = store
    supplier_store.accept(conn, "here", "work-a", 1, FLOUR)
    assert supplier_store.lookup(conn, "here")["operation_key"] == "here"
    assert supplier_store.lookup(conn, "gone") is None
    assert logged_answers(conn, "here") == [("POST", 201), ("GET", 200)]
    assert logged_answers(conn, "gone") == [("GET", 404)]


def test_a_release_at_the_fence_s_own_generation_is_admitted(store):
    """The release's fence refuses only a LOWER generation, per work."""
    supplier_store, conn = store
    supplier_store.accept(conn, "o1", "work-a", 4, FLOUR)
    supplier_store.accept(conn, "o2", "work-b", 1, FLOUR)
    assert supplier_store.release(conn, "r1", "o1", "work-a", 3) == (
        412, {"error": "stale_generation", "highest": 4})
    assert supplier_store.release(conn, "r1", "o1", "work-a", 4)[0] == 201
    assert supplier_store.release(conn, "r2", "o2", "work-b", 1)[0] == 201
    assert supplier_store.fence_of(conn, "work-a") == 4
    assert supplier_store.fence_of(conn, "work-b") == 1
    assert logged_answers(conn, "r1") == [("POST", 412), ("POST", 201)]


def test_a_release_key_reused_for_another_order_is_422_not_a_replay(store):
    supplier_store, conn = store
    for order in ("o1", "o2"):
        supplier_store.accept(conn, order, "work-a", 1, FLOUR)
    assert supplier_store.release(conn, "r", "o1", "work-a", 1)[0] == 201
    assert supplier_store.release(conn, "r", "o2", "work-a", 1) == (
        422, {"error": "conflict", "operation_key": "r"})
    assert supplier_store.release(conn, "r", "o1", "work-a", 2)[0] == 200
    assert supplier_store.fence_of(conn, "work-a") == 2  # the replay raised it
    assert [r["order_key"] for r in conn.execute("SELECT * FROM releases")] == ["o1"]


def test_a_refusal_is_logged_only_under_a_key_it_named(store):
    supplier_store, conn = store
    supplier_store.log_refusal(conn, "POST", (None, "work-a", 1), 400)
    supplier_store.log_refusal(conn, "POST", ("named", None, None), 400)
    rows = [tuple(r) for r in conn.execute(
        "SELECT operation_key, work_id, generation, answer FROM requests")]
    assert rows == [("named", None, None, 400)]


def test_the_supplier_s_schema_is_written_as_a_system_of_record(tmp_path,
                                                                 monkeypatch):
    """Bug: ``install`` with ``record=False``: the new file's tables are
    created at synchronous=NORMAL, not the FULL a system of record keeps."""
    from crashcourse.services.supplier import store as supplier_store

    real, levels = supplier_store.ensure_schema, []

    def spy(conn, schema):
        levels.append(conn.execute("PRAGMA synchronous").fetchone()[0])
        return real(conn, schema)

    monkeypatch.setattr(supplier_store, "ensure_schema", spy)
    supplier_store.install(tmp_path / "supplier.sqlite")
    assert levels == [2]  # 2 is FULL


def test_a_release_is_decided_under_the_supplier_s_write_lock(tmp_path,
                                                             monkeypatch):
    """Bug: ``store.release`` out of its ``immediate`` block: the fence read
    and the release row interleave with another writer's, so a stale holder
    can release past a fence a newer one is raising."""
    from crashcourse.services.supplier import store as supplier_store

    db = tmp_path / "supplier.sqlite"
    supplier_store.install(db)
    with opened(db) as conn:
        supplier_store.accept(conn, "o1", "work-a", 1, FLOUR)
    statuses = []
    got_in = second_writer_got_in(
        db, monkeypatch, supplier_store, "fence_of",
        lambda conn: statuses.append(
            supplier_store.release(conn, "r1", "o1", "work-a", 1)[0]))
    assert statuses == [201] and not got_in


def test_a_lookup_reads_and_logs_under_the_write_lock(tmp_path, monkeypatch):
    """Bug: ``store.lookup`` out of its ``immediate`` block: the order read
    and the logged answer are two moments, so the log can say 404 for a key
    an order was stored under in between."""
    from crashcourse.services.supplier import store as supplier_store

    db = tmp_path / "supplier.sqlite"
    supplier_store.install(db)
    found = []
    got_in = second_writer_got_in(
        db, monkeypatch, supplier_store, "find_order",
        lambda conn: found.append(supplier_store.lookup(conn, "absent")))
    assert found == [None] and not got_in


def test_only_a_path_ending_in_release_releases(supplier):
    """``/orders/{key}`` without ``/release`` is no release, even when cutting
    the last eight characters off would name a placed order."""
    post(supplier.url, FLOUR, key="held-7", work="work-r7")
    request = urllib.request.Request(
        f"{supplier.url}/orders/held-7XXXXXXXX", data=b"", method="POST",
        headers={"Idempotency-Key": "release-7", "X-Work-Id": "work-r7",
                 "X-Generation": "1"})
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(request, timeout=5)
    assert answered.value.code == 404
    assert rows_of(supplier.db, "releases", "order_key", "held-7") == []


def test_only_a_busy_answer_tells_the_caller_to_retry(supplier):
    """Retry-After goes with 503 and an in-flight 409 only: on a 201 or a
    refusal it would tell a caller to ask again what is already decided."""
    headers = {"Content-Type": "application/json", "Idempotency-Key": "no-retry",
               "X-Work-Id": "work-nr", "X-Generation": "1"}
    placed = urllib.request.Request(f"{supplier.url}/orders", method="POST",
                                    data=json.dumps(FLOUR).encode(), headers=headers)
    with urllib.request.urlopen(placed, timeout=5) as response:
        assert response.status == 201 and response.headers["Retry-After"] is None
    bad = urllib.request.Request(f"{supplier.url}/orders", method="POST",
                                 data=b"{not json", headers=headers)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(bad, timeout=5)
    assert refused.value.code == 400 and refused.value.headers["Retry-After"] is None


@pytest.mark.parametrize("path", ["", "has%20space", "a/../b?c"])
def test_a_get_of_no_order_s_path_is_404(supplier, path):
    status, body = get(supplier.url, path)
    assert (status, body["error"]) == (404, "not_found")
