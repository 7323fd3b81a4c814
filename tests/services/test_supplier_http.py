"""The supplier answers every request, over raw sockets and under load (ch. 06).

Issue 14: connections reset under a burst, a padded body read as a second
request, a short body committed after the caller gave up, headers that
crashed the handler, a locked or lost store, an idle caller holding a thread
forever. Each test speaks to a real supplier process on loopback, mostly over
a raw socket so the framing is exactly what the test wrote; every wait is
bounded.
"""

from __future__ import annotations

import http.client
import io
import json
import re
import select
import socket
import subprocess
import threading
import time
from urllib.parse import urlsplit

import pytest

from crashcourse.effects import FencingToken
from crashcourse.lab.harness import Harness
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import opened
from crashcourse.waiting import wait_until

FLOUR = {"sku": "flour-25kg", "quantity": 6, "unit_cents": 2150}
PROPOSAL = json.dumps(FLOUR).encode()
WAIT_S = 30.0  # the longest a test waits for one answer: a hang bound, sized
# for a loaded machine (answers come in ms; 5 s was within reach at load 10)
CLOSE = ("Connection: close",)  # asked for where an answer should be a success


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """A supplier that drops a silent caller after 1 s and waits 0.3 s for its
    store's lock before answering 503."""
    db = tmp_path_factory.mktemp("quick") / "sup.db"
    with Harness() as harness, start_supplier(harness, db, "--timeout", "1",
                                              "--busy-ms", "300") as running:
        yield running


@pytest.fixture(scope="module")
def patient(tmp_path_factory):
    """A supplier with the default timeouts (10 s silence, 5 s lock wait)."""
    db = tmp_path_factory.mktemp("patient") / "sup.db"
    with Harness() as harness, start_supplier(harness, db) as running:
        yield running


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname, parts.port


def raw_post(key: str, body: bytes = PROPOSAL, *, length: str | None = "auto",
             generation: str = "1", extra: tuple[str, ...] = ()) -> bytes:
    """The bytes of one POST /orders, written by hand (headers in latin-1,
    as ``http.client`` sends them). Each key is its own work, so one test's
    generation never fences another's."""
    lines = ["POST /orders HTTP/1.1", "Host: 127.0.0.1",
             "Content-Type: application/json", f"Idempotency-Key: {key}",
             f"X-Work-Id: work-{key[:40]}", f"X-Generation: {generation}", *extra]
    if length is not None:
        lines.append(f"Content-Length: {len(body) if length == 'auto' else length}")
    return "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body


def talk(url: str, data: bytes, *, shut: bool = False, wait: float = WAIT_S) -> bytes:
    """Send ``data`` on a new connection; everything the supplier says until
    it closes. Silence for ``wait`` s, or no close by then, fails the test."""
    with socket.create_connection(address(url), timeout=wait) as sock:
        sock.sendall(data)
        if shut:  # the caller sent all it will: the supplier reads end of file
            sock.shutdown(socket.SHUT_WR)
        received, deadline = b"", time.monotonic() + wait
        while chunk := sock.recv(65536):
            received += chunk
            assert time.monotonic() < deadline, "the supplier kept the connection"
        return received


def statuses(received: bytes) -> list[int]:
    """The status of every response in ``received``, in order."""
    return [int(code) for code in re.findall(rb"^HTTP/1\.[01] (\d{3}) ", received,
                                             re.MULTILINE)]


def first_answer(received: bytes) -> tuple[dict, dict]:
    """The headers and JSON body of the first response in ``received``."""
    head, _, rest = received.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in
                   head.decode("latin-1").split("\r\n")[1:])
    return headers, json.loads(rest[:int(headers["Content-Length"])])


def orders_for(db, *keys: str) -> dict[str, int]:
    with opened(db) as conn:
        return {key: conn.execute(
            "SELECT count(*) FROM orders WHERE operation_key = :key",
            {"key": key}).fetchone()[0] for key in keys}


def logged(db, key: str) -> list[tuple]:
    with opened(db) as conn:
        return [(r["method"], r["generation"], r["answer"]) for r in conn.execute(
            "SELECT * FROM requests WHERE operation_key = :key ORDER BY seq",
            {"key": key})]


# --- load: every request gets an HTTP answer ---------------------------------


def post_status(url: str, key: str) -> int:
    """One POST on its own connection: the status, or raises."""
    host, port = address(url)
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("POST", "/orders", PROPOSAL, {
            "Content-Type": "application/json", "Idempotency-Key": key,
            "X-Work-Id": f"work-{key}", "X-Generation": "1"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def all_at_once(url: str, keys: list[str]) -> list:
    """POST every key from its own thread, released together; each status,
    or the exception's name when no answer came."""
    start, results = threading.Barrier(len(keys)), [None] * len(keys)

    def one(index: int, key: str) -> None:
        try:
            start.wait(timeout=30)
            results[index] = post_status(url, key)
        except Exception as lost:  # noqa: BLE001  (recorded, then asserted on)
            results[index] = type(lost).__name__

    threads = [threading.Thread(target=one, args=(i, k), daemon=True)
               for i, k in enumerate(keys)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return results


def test_150_requests_in_three_bursts_all_get_an_answer_one_order_per_key(patient):
    bursts = [[f"a-{i % 25}" for i in range(50)],  # each key twice, at once
              [f"b-{i % 25}" for i in range(50)],
              [f"a-{i}" if i < 25 else f"c-{i}" for i in range(50)]]  # replays too
    answered = []
    for keys in bursts:
        answered += zip(keys, all_at_once(patient.url, keys), strict=True)
    assert [(k, s) for k, s in answered if s not in (200, 201, 409, 503)] == []
    decided = {k for k, s in answered if s in (200, 201)}
    for key in {k for k, _ in answered} - decided:  # "ask again", as told
        # Asked again until decided, bounded by time rather than by five tries
        # a second apart: a loaded machine may need more, never fewer (issue 36).
        wait_until(lambda key=key: post_status(patient.url, key) in (200, 201),
                   60, interval=0.5, what=f"{key} decided when asked again")
    counts = orders_for(patient.db, *{k for k, _ in answered})
    assert len(counts) == 75 and set(counts.values()) == {1}


# --- framing: exactly Content-Length bytes, or nothing -----------------------


def test_a_padded_request_never_makes_two_orders(quick):
    # valid JSON padded to 64 KiB, then a whole second POST inside the body
    padded = PROPOSAL[:-1] + b" " * (65536 - len(PROPOSAL)) + b"}"
    inner = raw_post("smuggled")
    received = talk(quick.url, raw_post("padded", padded + inner), wait=10)
    assert statuses(received) == [413]
    assert orders_for(quick.db, "padded", "smuggled") == {"padded": 0, "smuggled": 0}
    assert logged(quick.db, "padded") == [("POST", 1, 413)]


@pytest.mark.parametrize("key, length, extra, shut, status", [
    # no length: the body, a second POST, must not be read as a request
    ("no-length", None, (), False, 411),
    ("chunked", None, ("Transfer-Encoding: chunked",), False, 411),
    ("length-abc", "abc", (), False, 400),
    ("length-minus", "-1", (), True, 400),  # read(-1) would wait for end of file
    ("length-super", "²", (), False, 400),
    ("length-float", "1e2", (), False, 400),
    ("length-twice", "auto", ("Content-Length: 5",), False, 400),
])
def test_a_missing_or_invalid_length_is_refused_and_nothing_read(
        quick, key, length, extra, shut, status):
    smuggled = f"{key}-inner"
    received = talk(quick.url, raw_post(key, raw_post(smuggled), length=length,
                                        extra=extra), shut=shut)
    assert statuses(received) == [status]  # one answer, then the close
    assert first_answer(received)[0]["Connection"] == "close"
    assert orders_for(quick.db, key, smuggled) == {key: 0, smuggled: 0}
    assert logged(quick.db, key) == [("POST", 1, status)]


def test_a_get_with_a_body_is_refused_and_its_body_never_read(quick):
    assert statuses(talk(quick.url, raw_post("got", extra=CLOSE))) == [201]
    inner = raw_post("got-inner")
    data = (f"GET /orders/got HTTP/1.1\r\nHost: x\r\nContent-Length: {len(inner)}"
            "\r\n\r\n").encode() + inner
    assert statuses(talk(quick.url, data)) == [400]
    assert orders_for(quick.db, "got-inner") == {"got-inner": 0}
    # the refusal is logged under the key in its path, as a GET
    assert logged(quick.db, "got")[-1] == ("GET", None, 400)


def test_a_body_over_the_limit_is_413_before_it_is_read(quick):
    # headers only: a supplier that tried to read the declared 1 MB would wait
    received = talk(quick.url, raw_post("huge", b"", length=str(10**6)), wait=3)
    assert statuses(received) == [413]
    assert orders_for(quick.db, "huge") == {"huge": 0}


def test_a_caller_still_sending_hears_the_refusal_not_a_reset(quick):
    """The supplier refuses at the headers while the caller is still sending
    its body: it must drain (bounded) before closing, or the caller's next
    write meets a closed socket and the 413 is never read."""
    with socket.create_connection(address(quick.url), timeout=WAIT_S) as sock:
        sock.sendall(raw_post("trickle", b"", length=str(10**6)))
        for _ in range(8):  # half a megabyte, a piece at a time
            time.sleep(0.02)
            sock.sendall(b" " * 65536)
        sock.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert statuses(received) == [413]
    assert orders_for(quick.db, "trickle") == {"trickle": 0}


@pytest.mark.parametrize("shut, status", [(True, 400), (False, 408)])
def test_a_short_body_commits_nothing(quick, shut, status):
    """A whole proposal, but 20 bytes fewer than declared: the caller closes
    its side (400) or stalls past the supplier's 1 s timeout (408)."""
    key = f"short-{status}"
    data = raw_post(key, PROPOSAL, length=str(len(PROPOSAL) + 20))
    received = talk(quick.url, data, shut=shut)  # the 408 comes at ~1 s
    assert statuses(received) == [status]
    # talk() read to the supplier's close: its handler shuts its side only in
    # finish(), once handle() returned, so the request was decided by then,
    # and its refusal row, written last (after the answer when it says
    # "ask again"), is there: nothing is left to be decided after it.
    assert logged(quick.db, key) == [("POST", 1, status)]
    assert orders_for(quick.db, key) == {key: 0}


# --- bad input is answered, never a crash ----------------------------------


@pytest.mark.parametrize("key, generation", [
    ("gen-super", "²"),  # a digit to str.isdigit, not to int
    ("gen-power", "2**64"),
    ("gen-2-64", str(2**64)),  # too large for an SQLite INTEGER
    ("gen-2-63", str(2**63)),
    ("gen-long", "9" * 5000),  # longer than int() reads
    ("gen-plus", "+1"),
    ("gen-float", "1.0"),
    ("k" * 201, "1"),  # a key longer than any operation key
])
def test_a_bad_token_is_400_and_no_order(quick, key, generation):
    received = talk(quick.url, raw_post(key, generation=generation))
    assert statuses(received) == [400]
    assert first_answer(received)[1]["error"] == "bad_request"
    assert orders_for(quick.db, key) == {key: 0}
    if len(key) <= 200:  # a usable key: the refusal is in the log, no generation
        assert logged(quick.db, key) == [("POST", None, 400)]


def test_the_largest_generation_is_accepted(quick):
    received = talk(quick.url, raw_post("gen-max", generation=str(2**63 - 1),
                                        extra=CLOSE))
    assert statuses(received) == [201]


# --- idle callers, a locked or lost store, a key in flight -------------------


@pytest.mark.parametrize("data", [b"", b"POST /orders HTTP/1.1\r\nHost: x\r\n"])
def test_a_silent_caller_loses_its_connection(quick, data):
    started = time.monotonic()
    received = talk(quick.url, data, wait=4)  # closed by the supplier, bounded
    assert received == b"" and time.monotonic() - started < 4


def test_a_locked_store_is_503_with_retry_after_and_decides_nothing(quick):
    with opened(quick.db) as holder:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        try:
            refused = talk(quick.url, raw_post("locked"))
            looked = talk(quick.url, b"GET /orders/locked HTTP/1.1\r\nHost: x\r\n\r\n")
        finally:
            holder.execute("ROLLBACK")
    headers, body = first_answer(refused)
    assert statuses(refused) == [503] and body["error"] == "unavailable"
    assert headers["Retry-After"] == "1" and statuses(looked) == [503]
    assert orders_for(quick.db, "locked") == {"locked": 0}
    once_free = talk(quick.url, raw_post("locked", extra=CLOSE))
    assert statuses(once_free) == [201]


@pytest.mark.parametrize("damage", [b"", b"not a database at all" * 100])
def test_a_lost_store_is_503_and_never_recreated(tmp_path, damage):
    with Harness() as harness, start_supplier(harness, tmp_path / "sup.db") as sup:
        assert statuses(talk(sup.url, raw_post("before", extra=CLOSE)))[:1] == [201]
        for suffix in ("-wal", "-shm"):
            tmp_path.joinpath("sup.db" + suffix).unlink(missing_ok=True)
        sup.db.write_bytes(damage)  # truncated, or overwritten
        refused = talk(sup.url, raw_post("after"))
        looked = talk(sup.url, b"GET /orders/before HTTP/1.1\r\nHost: x\r\n\r\n")
        assert statuses(refused) == statuses(looked) == [503]
        assert first_answer(refused)[0]["Retry-After"] == "1"
        assert sup.db.read_bytes() == damage  # never replaced by an empty store
        assert not tmp_path.joinpath("sup.db-wal").exists()


def test_a_read_only_store_is_503(tmp_path):
    """The file may not be written (immutable: even root cannot write it)."""
    with Harness() as harness, start_supplier(harness, tmp_path / "sup.db") as sup:
        assert statuses(talk(sup.url, raw_post("before", extra=CLOSE))) == [201]
        frozen = subprocess.run(["chattr", "+i", str(sup.db)], capture_output=True)
        if frozen.returncode != 0:
            pytest.skip(f"chattr +i is not available here: {frozen.stderr!r}")
        try:
            refused = talk(sup.url, raw_post("after"))
        finally:
            subprocess.run(["chattr", "-i", str(sup.db)], check=True)
    assert statuses(refused) == [503]
    assert first_answer(refused)[0]["Retry-After"] == "1"
    assert orders_for(sup.db, "before", "after") == {"before": 1, "after": 0}


def test_a_second_request_for_a_key_in_flight_is_409(patient):
    results, heard = {}, threading.Event()

    def send(name: str) -> None:
        """``talk``, but saying when an answer's headers are in: the 409 goes
        out at once, its log row (and so the close) only once the store is
        free again."""
        with socket.create_connection(address(patient.url), timeout=15) as sock:
            sock.sendall(raw_post("in-flight", extra=CLOSE))
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
                if b"\r\n\r\n" in received:
                    heard.set()
        results[name] = received

    # Neither is told to go first: whichever the supplier takes first waits
    # inside (the store is held), the other hears 409 at once. The store is
    # held until that answer is heard, an event, where 0.4 s sleeps guessed
    # that each request had arrived (issue 36).
    with opened(patient.db) as holder:
        holder.execute("BEGIN IMMEDIATE")  # the first request waits inside
        try:
            threads = [threading.Thread(target=send, args=(name,), daemon=True)
                       for name in ("first", "second")]
            for thread in threads:
                thread.start()
            assert heard.wait(WAIT_S), "no answer while the store was held"
        finally:
            holder.execute("ROLLBACK")
    for thread in threads:
        thread.join(20)
    answers = sorted(statuses(received)[0] for received in results.values())
    assert answers == [201, 409]
    busy = next(r for r in results.values() if statuses(r)[0] == 409)
    headers, body = first_answer(busy)
    assert body["error"] == "in_flight" and headers["Retry-After"] == "1"
    assert orders_for(patient.db, "in-flight") == {"in-flight": 1}
    assert sorted(logged(patient.db, "in-flight")) == [("POST", 1, 201),
                                                      ("POST", 1, 409)]


# --- one key, one request: headers and bodies accepted only as sent (issue 23) -


def raw_with(headers: list[str], body: bytes = PROPOSAL) -> bytes:
    """A POST /orders with exactly these token header lines (and the framing)."""
    lines = ["POST /orders HTTP/1.1", "Host: 127.0.0.1",
             "Content-Type: application/json", *headers,
             f"Content-Length: {len(body)}"]
    return "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body


def stored_keys(db) -> list[str]:
    with opened(db) as conn:
        return [row[0] for row in conn.execute(
            "SELECT operation_key FROM orders ORDER BY operation_key")]


@pytest.mark.parametrize("headers", [
    ["Idempotency-Key: twice-a", "Idempotency-Key: twice-b",
     "X-Work-Id: work-twice", "X-Generation: 1"],
    ["Idempotency-Key: twice-c", "X-Work-Id: work-1", "X-Work-Id: work-2",
     "X-Generation: 1"],
    ["Idempotency-Key: twice-d", "X-Work-Id: work-twice-d", "X-Generation: 1",
     "X-Generation: 9"],
    ["Idempotency-Key: fold-a", " fold-b", "X-Work-Id: work-fold",
     "X-Generation: 1"],  # obs-fold: a header continued on the next line
], ids=["two-keys", "two-work-ids", "two-generations", "folded-key"])
def test_a_token_header_sent_twice_or_folded_is_400_and_no_order(quick, headers):
    before = stored_keys(quick.db)
    received = talk(quick.url, raw_with(headers))
    assert statuses(received) == [400]
    assert stored_keys(quick.db) == before
    named = [line.split(": ", 1)[1] for line in headers
             if line.startswith("Idempotency-Key: ")]
    if len(named) > 1:  # which of two keys? neither is logged
        assert [logged(quick.db, key) for key in named] == [[], []]


@pytest.mark.parametrize("key", [
    "has space", "has#hash", "has?query", "nul\x00inside", "tab\tinside",
    "caf\xe9",
], ids=["space", "hash", "query", "nul", "tab", "latin-1"])
def test_a_key_a_get_could_not_name_again_is_refused(quick, key):
    before = stored_keys(quick.db)
    received = talk(quick.url, raw_with([f"Idempotency-Key: {key}",
                                         "X-Work-Id: work-odd", "X-Generation: 1"]))
    assert statuses(received) == [400]
    assert stored_keys(quick.db) == before


def test_every_stored_key_is_found_again_by_a_get(quick):
    from crashcourse.services import supplier as supplier_client

    key = "restock-0042/3/place_order:v=1@shop+x~y.z_0123456789abcdef"
    status, _ = supplier_client.place_order(quick.url, key, FLOUR,
                                            token=FencingToken("work-roundtrip", 1))
    assert status == 201
    assert supplier_client.get_order(quick.url, key)[0] == 200


def test_the_same_key_under_another_work_is_a_conflict_not_a_replay(quick):
    from crashcourse.services import supplier as supplier_client

    first = supplier_client.place_order(quick.url, "shared-key", FLOUR,
                                        token=FencingToken("work-first", 1))
    other = supplier_client.place_order(quick.url, "shared-key", FLOUR,
                                        token=FencingToken("work-other", 5))
    assert (first[0], other[0]) == (201, 422)
    with opened(quick.db) as conn:
        fenced = [row[0] for row in conn.execute(
            "SELECT work_id FROM fences WHERE work_id = 'work-other'")]
    assert fenced == []  # the refused request raised no fence for other work


@pytest.mark.parametrize("body", [
    PROPOSAL.decode().encode("utf-16"),
    b"\xef\xbb\xbf" + PROPOSAL,  # a UTF-8 byte order mark
    b'{"sku": "flour", "quantity": 6.0, "unit_cents": 2150}',
    b'{"sku": "flour", "quantity": true, "unit_cents": 2150}',
], ids=["utf-16", "bom", "float-quantity", "bool-quantity"])
def test_only_the_json_the_client_sends_is_accepted(quick, body):
    key = f"body-{abs(hash(body)) % 10**8}"
    received = talk(quick.url, raw_post(key, body))
    assert statuses(received) == [400]
    assert orders_for(quick.db, key) == {key: 0}


def test_a_body_trickled_inside_the_socket_timeout_is_cut_at_the_deadline(quick):
    """The quick supplier drops a caller silent for 1 s; one sending a byte
    every 0.5 s is never silent that long, yet its request must end within
    the same second: 408 while the caller is still trickling, no order."""
    key = "trickle"
    head = raw_post(key)[:-len(PROPOSAL)]
    with socket.create_connection(address(quick.url), timeout=WAIT_S) as sock:
        sock.sendall(head)
        started, answered_at = time.monotonic(), None
        for byte in PROPOSAL[:12]:  # 6 s of trickle if nobody stops it
            if select.select([sock], [], [], 0.5)[0]:
                answered_at = time.monotonic() - started
                break
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # the supplier already answered and closed
                break
        sock.settimeout(WAIT_S)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except OSError:
            pass
    assert statuses(received) == [408]
    assert answered_at is not None and answered_at < 3.0, answered_at
    assert orders_for(quick.db, key) == {key: 0}


# --- request.py's rules, called directly at their boundaries (issue 23) -------


def headers_of(*lines: str):
    """Headers parsed as the server parses them (``http.client``)."""
    raw = "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n"
    return http.client.parse_headers(io.BytesIO(raw))


TOKEN = ("Idempotency-Key: k-1", "X-Work-Id: work-1", "X-Generation: 1")


@pytest.mark.parametrize("lines, detail", [
    ((*TOKEN, "Idempotency-Key: k-2"), "Idempotency-Key must be sent once, got 2"),
    ((*TOKEN, "X-Work-Id: work-2"), "X-Work-Id must be sent once, got 2"),
    (("Idempotency-Key: k-1", " k-2", *TOKEN[1:]),
     "Idempotency-Key must be one line (no folded header)"),
], ids=["two-keys", "two-work-ids", "folded-key"])
def test_a_refused_token_s_detail_names_the_header(lines, detail):
    """A 400 says which header was wrong; a generic one leaves the caller
    guessing which of two keys the supplier saw."""
    from crashcourse.services.supplier.request import Refused, parse_token

    with pytest.raises(Refused) as refused:
        parse_token(headers_of(*lines))
    assert refused.value.body() == {"error": "bad_request", "detail": detail}


@pytest.mark.parametrize("generation, expected", [
    ("1", 1), (str(2**63 - 1), 2**63 - 1), (str(2**63), None), ("0", None),
    ("9" * 19, None), ("9" * 20, None), ("01", 1),
])
def test_a_generation_is_usable_from_1_to_the_largest_integer(generation, expected):
    from crashcourse.services.supplier.request import named_token

    token = named_token(headers_of(*TOKEN[:2], f"X-Generation: {generation}"))
    assert token == ("k-1", "work-1", expected)


def test_two_of_a_token_header_name_nothing_to_log_under():
    from crashcourse.services.supplier.request import named_token

    assert named_token(headers_of(*TOKEN, "Idempotency-Key: k-2")) == (
        None, None, None)
    assert named_token(headers_of(*TOKEN, "X-Generation: 2")) == (None, None, None)


@pytest.mark.parametrize("key, usable", [
    ("k" * 200, True), ("k" * 201, False), ("", False), ("a/b:c@d+e=f~g.h_i-j", True),
])
def test_a_key_is_1_to_200_url_safe_characters(key, usable):
    from crashcourse.services.supplier.request import usable_key

    assert (usable_key(key) == key) is usable


@pytest.mark.parametrize("lines, answer", [
    (("Content-Length: 16384",), 16384), (("Content-Length: 0",), 0),
    (("Content-Length:  12 ",), 12),
    (("Content-Length: 16385",), (413, "too_large")),
    (("Content-Length: " + "1" * 20,), (400, "bad_request")),
    ((), (411, "length_required")),
    (("Content-Length: 5", "Transfer-Encoding: chunked"), (411, "length_required")),
    (("Content-Length: 5", "Content-Length: 5"), (400, "bad_request")),
])
def test_a_length_is_one_decimal_up_to_the_limit(lines, answer):
    from crashcourse.services.supplier.request import Refused, body_length

    try:
        got = body_length(headers_of(*lines))
    except Refused as refused:
        got = (refused.status, refused.error)
    assert got == answer


@pytest.mark.parametrize("change, refused", [
    ({"quantity": 10_000}, False), ({"quantity": 10_001}, True),
    ({"quantity": 1}, False), ({"quantity": 0}, True),
    ({"unit_cents": 10**9}, False), ({"unit_cents": 10**9 + 1}, True),
    ({"unit_cents": False}, True), ({"sku": 7}, True), ({"sku": "\t"}, True),
])
def test_a_proposal_s_fields_are_checked_at_their_bounds(change, refused):
    from crashcourse.services.supplier.request import Refused, parse_proposal

    body = json.dumps({**FLOUR, **change}).encode()
    if refused:
        with pytest.raises(Refused):
            parse_proposal(body)
    else:
        assert parse_proposal(body) == {**FLOUR, **change}


@pytest.mark.parametrize("lines, refused", [
    ((), False), (("Content-Length: 0",), False), (("Content-Length: 3",), True),
    (("Transfer-Encoding: chunked",), True),
])
def test_a_get_declares_no_body(lines, refused):
    from crashcourse.services.supplier.request import Refused, no_body

    if refused:
        with pytest.raises(Refused):
            no_body(headers_of(*lines))
    else:
        no_body(headers_of(*lines))


def test_a_body_is_read_exactly_or_refused():
    from crashcourse.services.supplier.request import Refused, read_exactly

    assert read_exactly(io.BytesIO(b"abcdef"), 4) == b"abcd"
    assert read_exactly(io.BytesIO(b""), 0) == b""
    # a deadline without a connection to pace: read as it comes
    assert read_exactly(io.BytesIO(b"abcd"), 4, None, 5.0) == b"abcd"
    with pytest.raises(Refused) as short:
        read_exactly(io.BytesIO(b"abc"), 4)
    assert (short.value.status, short.value.error) == (400, "bad_request")


def test_a_paced_read_stops_at_its_deadline_and_restores_the_timeout():
    """The whole body within ``deadline_s``, even if each byte comes inside
    the socket timeout; the socket's own timeout is given back after."""
    from crashcourse.services.supplier.request import Refused, read_exactly

    server, client = socket.socketpair()
    with server, client:
        server.settimeout(60.0)  # the socket's own wait: far past the deadline
        client.sendall(b"ab")  # two of the four declared bytes, then silence
        rfile, outcome = server.makefile("rb"), []

        def read() -> None:
            try:
                read_exactly(rfile, 4, server, 0.3)
            except Refused as refused:
                outcome.append((refused.status, refused.error))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(WAIT_S)  # each wait cut to what is left of the 0.3 s
        assert not reader.is_alive(), "the read waited for the socket's timeout"
        assert outcome == [(408, "timeout")]
        assert server.gettimeout() == 60.0
    server, client = socket.socketpair()
    with server, client:
        client.sendall(b"cdef")
        rfile = server.makefile("rb")
        assert read_exactly(rfile, 4, server, 5.0) == b"cdef"
        client.sendall(b"g")
        with pytest.raises(Refused) as spent:  # no time left: refused at once
            read_exactly(rfile, 1, server, -1.0)
        assert spent.value.status == 408


def test_a_key_in_flight_is_409_ask_again_and_freed_after(tmp_path):
    from crashcourse.services.supplier.request import InFlight, Refused

    flight = InFlight()
    with flight.holding("k"):
        with pytest.raises(Refused) as busy:
            with flight.holding("k"):
                pass
        with flight.holding("other"):
            pass
    assert (busy.value.status, busy.value.error, busy.value.retry) == (
        409, "in_flight", True)
    with pytest.raises(RuntimeError):
        with flight.holding("k"):
            raise RuntimeError("the decision failed")
    with flight.holding("k"):  # freed after a failure too
        assert flight.keys == {"k"}
    assert flight.keys == set()


class Dribble:
    """A reader that gives 2 bytes at first, then all that is asked for:
    a body arriving in pieces, with the next request's bytes behind it."""

    def __init__(self, data: bytes) -> None:
        self.data, self.first = data, True

    def read(self, size: int) -> bytes:
        give = 2 if self.first else size
        self.first, piece, self.data = False, self.data[:give], self.data[give:]
        return piece

    read1 = read

    def gettimeout(self):  # stands in for the connection too
        return None

    def settimeout(self, value) -> None:
        pass


@pytest.mark.parametrize("paced", [False, True], ids=["read", "read1"])
def test_a_body_in_pieces_is_never_read_past_its_length(paced):
    """Each read asks for what is LEFT: asking for more swallows the bytes
    of whatever the caller sends next (a pipelined request) into this body."""
    from crashcourse.services.supplier.request import read_exactly

    dribble = Dribble(b"abcdef" + b"GET /next")
    connection = dribble if paced else None
    assert read_exactly(dribble, 6, connection, 5.0 if paced else None) == b"abcdef"
    assert dribble.data == b"GET /next"


def test_a_caller_who_never_stops_sending_is_cut_off_after_the_linger(quick):
    """The drain after an error answer is bounded in time AND in bytes: a
    caller trickling bytes for ever (under the 1 MB bound) is closed once the
    1 s linger is over, not read for as long as it keeps sending. The answer
    ends with the supplier's FIN; the close shows when a send is refused."""
    cut_off, sent = threading.Event(), []
    with socket.create_connection(address(quick.url), timeout=WAIT_S) as sock:
        sock.sendall(raw_post("endless", b"", length=str(10**6)))

        def trickle() -> None:
            deadline = time.monotonic() + 4 * WAIT_S  # bounded: gives up after
            try:
                while time.monotonic() < deadline:
                    sock.sendall(b" ")
                    sent.append(1)
                    time.sleep(0.05)
            except OSError:  # reset by the supplier: it stopped reading
                cut_off.set()

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        received = b""
        while chunk := sock.recv(65536):  # the answer, then the supplier's FIN
            received += chunk
        sender.join(5 * WAIT_S)
    assert statuses(received) == [413]
    assert cut_off.is_set(), f"still draining after {len(sent)} sends"
