"""Chapter 10's worker and the supplier it calls from another host, on a
SQLite store (the worker's code is the same on a server's URL; the server
runs are tests/checkpoints/test_ch10_beyond_one_machine.py): its modes, its
refusals, and the supplier's ``--host``.

Every worker here is a real child process; every supplier a real server.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from crashcourse import claims, store
from crashcourse.claims import fence, orders
from crashcourse.lab.harness import Harness
from crashcourse.lab.two_hosts import at_schema
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import immediate, opened, table_rows
from crashcourse.waiting import wait_until

WORKER = [sys.executable, "-m", "crashcourse.workers.host_worker"]


@pytest.fixture
def shop(tmp_path):
    """An installed store with two pieces of work, and a supplier."""
    path = tmp_path / "shop.sqlite"
    with opened(path) as conn:
        orders.install(conn)
        for i in range(2):
            claims.enqueue(conn, f"phone:shelf-{i}", f"counter-{i}", f"Shelf {i}")
    with Harness() as harness, start_supplier(harness, tmp_path / "s.sqlite") as sup:
        yield path, sup


def worker(*args: str, **options) -> subprocess.Popen:
    return subprocess.Popen([*WORKER, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **options)


def store_clock(path: Path) -> float:
    with opened(path) as conn:
        return store.now(conn)


def report(out: str) -> dict:
    [line] = [line for line in out.splitlines() if line.startswith("report ")]
    return json.loads(line.partition(" ")[2])


def test_work_mode_orders_each_piece_once_and_finishes(shop):
    path, sup = shop
    done = worker("work", "--store", str(path), "--supplier", sup.url,
                  "--owner", "b-0", "--ttl", "30", "--wait", "2")
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    assert [status for _, status in report(out)["finished"]] == ["DONE", "DONE"]
    with opened(sup.db) as conn:
        sent = [r["work_id"] for r in table_rows(conn, "requests")
                if r["method"] == "POST"]
    with opened(path) as conn:
        work = [w["id"] for w in table_rows(conn, "work")]
    assert sorted(sent) == sorted(work)  # one order each


def test_hold_mode_writes_when_still_current_and_only_after_go(shop):
    path, sup = shop
    holder = worker("hold", "--store", str(path), "--supplier", sup.url,
                    "--owner", "a-holder", "--ttl", "30", "--wait", "2")
    ready = holder.stdout.readline()
    assert ready.startswith("ready ")
    with opened(sup.db) as conn:  # admitted and connected, nothing sent yet
        assert table_rows(conn, "requests") == []
    with opened(path) as conn:
        assert [o["status"] for o in table_rows(conn, "orders")] == [orders.SENDING]
    holder.stdin.write("go\n")
    holder.stdin.flush()
    out, err = holder.communicate(timeout=60)
    assert holder.returncode == 0, err
    found = report(ready + out)
    assert found["supplier"] == 201
    assert found["late"] == {"observe": "written", "finish": "written"}  # current
    with opened(path) as conn:
        assert fence.transcript(conn, found["work"])[-1]["kind"] == "late"


def test_a_held_worker_nobody_releases_does_not_go_on(shop):
    path, sup = shop
    holder = worker("hold", "--store", str(path), "--supplier", sup.url,
                    "--owner", "a-holder", "--ttl", "30", "--wait", "2")
    assert holder.stdout.readline().startswith("ready ")
    holder.stdin.close()  # the parent is gone: end of file, never "go"
    holder.wait(timeout=60)
    assert holder.returncode == 97
    with opened(sup.db) as conn:
        assert table_rows(conn, "requests") == []  # it sent nothing


def test_hold_mid_write_waits_inside_a_fenced_write_holding_the_lock(shop):
    """``writing``: the fence has checked and the write is open; on SQLite its
    transaction holds the file's write lock until the parent says go."""
    path, sup = shop
    held = worker("work", "--store", str(path), "--supplier", sup.url,
                  "--owner", "a-1", "--ttl", "30", "--wait", "2", "--hold-mid-write")
    line = held.stdout.readline()
    assert line.startswith("writing ")
    assert json.loads(line.partition(" ")[2]) == {"backend": None}  # not a server
    with opened(path, busy_timeout_ms=200) as conn:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            with immediate(conn):
                pass
    held.stdin.write("go\n")
    held.stdin.flush()
    out, err = held.communicate(timeout=60)
    assert held.returncode == 0, err
    assert [s for _, s in report(out)["finished"]] == ["DONE", "DONE"]


def test_a_worker_holds_at_one_place_only(shop):
    path, sup = shop
    done = worker("work", "--store", str(path), "--supplier", sup.url,
                  "--hold-after-send", "--hold-mid-write")
    out, err = done.communicate(timeout=60)
    assert done.returncode == 2 and "not allowed with" in err


@pytest.mark.parametrize(("args", "why"), [
    (["--ttl", "0"], "ttl"),
    (["--ttl", "1", "--wait", "1"], "--wait"),
    (["--patience", "0"], "--patience"),
    (["--owner", " "], "owner"),
], ids=["no-lease", "wait-not-in-lease", "no-patience", "blank-owner"])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(shop, args, why):
    path, sup = shop
    before = path.read_bytes()
    done = worker("work", "--store", str(path), "--supplier", sup.url, *args)
    out, err = done.communicate(timeout=60)
    assert done.returncode == 2 and why in err and len(err.splitlines()) == 1
    assert path.read_bytes() == before


def test_a_store_that_is_not_installed_is_refused_not_made(tmp_path):
    missing = tmp_path / "nothing.sqlite"
    done = worker("drain", "--store", str(missing))
    out, err = done.communicate(timeout=60)
    assert done.returncode == 2 and "no store" in err
    assert not missing.exists()


def test_work_and_hold_need_a_supplier(shop):
    path, _ = shop
    done = worker("work", "--store", str(path))
    assert done.communicate(timeout=60)[1].count("\n") == 1
    assert done.returncode == 2


def test_the_supplier_listens_where_it_is_told(tmp_path):
    with Harness() as harness, start_supplier(harness, tmp_path / "s.sqlite",
                                              host="127.0.0.2") as sup:
        assert sup.url.startswith("http://127.0.0.2:")
        port = int(sup.url.rsplit(":", 1)[1])
        with pytest.raises(urllib.error.HTTPError) as unknown:  # an answer: 404
            urllib.request.urlopen(f"{sup.url}/orders/nothing", timeout=5)
        assert unknown.value.code == 404
        with pytest.raises(ConnectionRefusedError):  # not on the usual address
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        assert sup.url_for("10.231.7.1") == f"http://10.231.7.1:{port}"


def test_a_store_address_names_its_schema():
    assert at_schema("postgresql://u:p@h:5/db", "shop") == (
        "postgresql://u:p@h:5/db?schema=shop")
    assert at_schema("postgresql://u:p@h:5/db?sslmode=require", "shop") == (
        "postgresql://u:p@h:5/db?sslmode=require&schema=shop")


def test_the_worker_imports_no_driver_until_a_server_is_named():
    """A host's worker on a SQLite file never loads psycopg; only a store's
    URL does (the runtime stays stdlib-only, chapter 10)."""
    code = ("import sys, crashcourse.workers.host_worker, "
            "crashcourse.lab.two_hosts; "
            "print(sorted(m for m in ('psycopg',) if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=60, cwd=Path(__file__).parent)
    assert done.stdout.strip() == "[]", done.stderr


def test_work_id_takes_that_piece_even_behind_a_lapsed_lease(shop):
    """``--work ID``: a piece earlier in claim order whose lease has run out
    (we wait for it, by the store's clock) is not this worker's to take."""
    path, sup = shop
    with opened(path) as conn:
        first, second = (w["id"] for w in table_rows(conn, "work"))
        lapsed = claims.claim(conn, "a-0", ttl=0.2, work_id=first)
    wait_until(lambda: store_clock(path) > lapsed.expires, 60, what="a-0's lease end")
    held = worker("work", "--store", str(path), "--supplier", sup.url, "--owner",
                  "a-1", "--ttl", "30", "--wait", "2", "--hold-mid-write",
                  "--work", second)
    assert held.stdout.readline().startswith("writing ")
    held.stdin.write("go\n")
    held.stdin.flush()
    out, err = held.communicate(timeout=60)
    assert held.returncode == 0, err
    with opened(path) as conn:
        grants = [(c["work_id"], c["owner"]) for c in table_rows(conn, "claims")]
    assert sorted(grants) == sorted([(first, "a-0"), (second, "a-1")])


def test_a_held_worker_that_cannot_hold_says_why_and_exits_5(shop):
    path, sup = shop
    with opened(path) as conn:
        first = table_rows(conn, "work")[0]["id"]
        claims.claim(conn, "someone-else", ttl=30, work_id=first)
        before = {t: table_rows(conn, t) for t in ("work", "claims", "orders")}
    held = worker("work", "--store", str(path), "--supplier", sup.url, "--owner",
                  "a-1", "--ttl", "1", "--wait", "0.5", "--patience", "0.5",
                  "--hold-mid-write", "--work", first)
    out, err = held.communicate(timeout=60)
    assert held.returncode == 5
    assert err.startswith("a-1 never reached its hold: finished [] (--work ")
    assert "'owner': 'someone-else'" in err  # what it saw: the piece's holder
    with opened(path) as conn:
        assert {t: table_rows(conn, t) for t in before} == before  # wrote nothing


def test_sent_carries_the_lease_end_the_store_holds(shop):
    """The parent waits out the idle holder's lease from ``sent``: it must be
    the lease the store granted, by the store's clock."""
    path, sup = shop
    held = worker("work", "--store", str(path), "--supplier", sup.url, "--owner",
                  "a-0", "--ttl", "30", "--wait", "2", "--hold-after-send")
    line = held.stdout.readline()
    assert line.startswith("sent ")
    facts = json.loads(line.partition(" ")[2])
    with opened(path) as conn:
        [granted] = table_rows(conn, "claims")
    assert facts == {"backend": None, "expires": granted["expires"]}
    held.stdin.write("go\n")
    held.stdin.flush()
    out, err = held.communicate(timeout=60)
    assert held.returncode == 0, err
