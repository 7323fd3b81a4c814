"""The runtime on PostgreSQL (chapter 10): the throwaway server, the
connection adapter, the claim and the fence on a server, and two hosts.

One server serves the whole session (``pg_server``); each test gets a fresh
schema of its own (``pg_url``). A reader's own server is used instead when
``CRASHCOURSE_PG_URL`` names one. The tests are skipped, with the reason, only
when there is neither a PostgreSQL to start nor a URL.
"""

from __future__ import annotations

import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
import uuid

import pytest

from crashcourse import store
from crashcourse.store import postgres_server

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed")
from crashcourse import claims  # noqa: E402
from crashcourse.claims import fence  # noqa: E402
from crashcourse.claims import postgres as claims_postgres  # noqa: E402
from crashcourse.claims.fence import StaleClaim  # noqa: E402
from crashcourse.lab import hosts  # noqa: E402
from crashcourse.store import postgres as pgstore  # noqa: E402
from crashcourse.waiting import wait_until  # noqa: E402
from tests.pg_counters import rows_read  # noqa: E402

# A worker on a store ADDRESS (a URL naming its schema), through the book's
# own modules: ``drain`` claims and finishes until nothing is eligible
# (``drain-on-go``: first claims one turn, prints ``ready`` and waits for a
# line on stdin, so the parent releases every racer together),
# ``hold`` only claims, ``late TTL go`` claims one turn, says so, waits for
# the parent's line and then tries to finish it (a partitioned holder's late
# write; no sleep decides when).
WORKER = """
import sys, time
from crashcourse import claims, store
from crashcourse.claims import fence
address, owner, mode = sys.argv[1:4]
with store.opened(address, require=("work", "claims")) as conn:
    if mode == "late":
        held = claims.claim(conn, owner, ttl=float(sys.argv[4]))
        print(f"claimed {held.id} {held.generation}" if held else "nothing",
              flush=True)
        sys.stdin.readline()  # until the parent says "go": after the cut
        try:
            fence.finish(conn, held, claims.DONE, "late")
            print("finished")
        except fence.StaleClaim as refused:
            print(f"refused: {refused.reason}")
    else:
        taken, held = 0, None
        if mode == "drain-on-go":  # hold a first turn, say so, wait for the parent
            held = claims.claim(conn, owner, ttl=600)
            print("ready" if held else "nothing", flush=True)
            if held is None or not sys.stdin.readline():
                sys.exit(3)
            mode = "drain"
        while (held := held or claims.claim(conn, owner, ttl=600)) is not None:
            if mode == "drain":
                fence.finish(conn, held, claims.DONE, owner)
            taken, held = taken + 1, None
        print(taken, flush=True)
"""


@pytest.fixture
def pg_url(pg_server):
    """A fresh, empty schema on the session's server: (url, schema)."""
    schema = "t_" + uuid.uuid4().hex[:12]
    pgstore.create_schema(pg_server.url, schema)
    yield pg_server.url, schema
    with pgstore.connect(pg_server.url).raw as raw:
        raw.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def conn(pg_url):
    url, schema = pg_url
    opened = pgstore.connect(url, schema=schema)
    yield opened
    opened.close()


def address(url: str, schema: str) -> str:
    """The store's address as ``store.opened`` takes it."""
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def queue(conn, sessions: list[str]) -> None:
    """One turn per entry, in this order, straight into work (setup)."""
    fence.install(conn)
    with store.immediate(conn):
        for i, session in enumerate(sessions):
            conn.execute(
                "INSERT INTO work (id, origin, session, prompt, subject, role, created)"
                " VALUES (:id, :origin, :session, 'restock', '', 'shop', :i)",
                {"id": f"work-{i}", "origin": f"o{i}", "session": session, "i": i})


def double_claims(conn) -> dict[str, int]:
    """Counted from rows: work claimed twice, and two live holders in one
    session at once (their [claimed, finished) spans overlap)."""
    twice = conn.execute("SELECT count(*) - count(DISTINCT work_id) FROM claims"
                         ).fetchone()[0]
    overlapping = conn.execute("""
        SELECT count(*) FROM claims AS a JOIN work AS wa ON wa.id = a.work_id
        JOIN claims AS b ON b.work_id > a.work_id
        JOIN work AS wb ON wb.id = b.work_id AND wb.session = wa.session
        WHERE a.claimed_at < coalesce(wb.finished, b.expires)
          AND b.claimed_at < coalesce(wa.finished, a.expires)""").fetchone()[0]
    return {"work": twice, "session": overlapping}


# --- the server -----------------------------------------------------------

def test_a_server_starts_on_tcp_unprivileged_and_stops_leaving_nothing():
    if postgres_server.binaries() is None:
        pytest.skip("no PostgreSQL binaries (pgserver or Debian's postgresql)")
    server = postgres_server.start()
    try:
        with psycopg.connect(server.url) as raw:  # over TCP: the URL's host
            assert raw.info.hostaddr == "127.0.0.1"
            assert raw.execute("SHOW server_version").fetchone()[0].startswith(
                server.version)
        with open(f"/proc/{server.pid}/status") as status:
            uid = next(line.split()[1] for line in status if line.startswith("Uid:"))
        assert uid != "0"  # PostgreSQL refuses root; we ran it as SERVER_USER
        backends = postgres_server._children(server.pid)
        assert backends  # checkpointer, writer...: what stop must not leave
    finally:
        postgres_server.stop(server)
    for pid in (server.pid, *backends):
        assert not os.path.exists(f"/proc/{pid}"), f"pid {pid} left behind"
    assert not os.path.exists(server.folder)


def test_a_server_past_its_shutdown_bound_is_killed_whole_not_while_it_forks():
    """``stop`` with no time for a fast shutdown takes the kill path: the
    postmaster is SIGSTOPped and only once the kernel shows it stopped (T) are
    its backends listed and SIGKILLed (a postmaster still running could fork
    one more meanwhile), then each is waited for until it runs no more (issue
    36: before, the list was read the instant SIGSTOP was sent and nothing
    waited for the killed backends)."""
    if postgres_server.binaries() is None:
        pytest.skip("no PostgreSQL binaries (pgserver or Debian's postgresql)")
    server = postgres_server.start()
    backends = postgres_server._children(server.pid)
    assert backends
    postgres_server.stop(server, timeout=0.0)
    for pid in (server.pid, *backends):
        assert postgres_server._state(pid) in (None, "Z"), f"pid {pid} still runs"
    assert not os.path.exists(server.folder)


def test_the_readers_own_server_is_used_and_never_stopped(monkeypatch, pg_server):
    monkeypatch.setenv(postgres_server.URL_ENV, pg_server.url)
    with postgres_server.running() as server:
        assert server.pid is None and server.url == pg_server.url
    with psycopg.connect(pg_server.url) as raw:  # still there
        assert raw.execute("SELECT 1").fetchone()[0] == 1


# --- the adapter ----------------------------------------------------------

def test_named_parameters_outside_literals_comments_and_casts():
    sql = "SELECT ':a', x::text, :b -- see :c, 100%\nFROM t WHERE y LIKE 'q%'"
    assert pgstore.translate(sql) == (
        "SELECT ':a', x::text, %(b)s -- see :c, 100%%\nFROM t WHERE y LIKE 'q%%'")
    nulls = frozenset({"w"})  # None: the server cannot type "$1 IS NULL"
    assert pgstore.translate("WHERE :w IS NULL", nulls) == "WHERE NULL IS NULL"


def test_rows_read_by_name_and_position(conn):
    conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v DOUBLE PRECISION)")
    conn.execute("INSERT INTO t VALUES (:k, :v)", {"k": "a", "v": 1.5})
    row = conn.execute("SELECT * FROM t WHERE (:w IS NULL OR k = :w)", {"w": None}
                       ).fetchone()
    assert (row["k"], row[1], dict(row)) == ("a", 1.5, {"k": "a", "v": 1.5})


def test_a_broken_unique_key_is_sqlite3s_integrity_error(conn):
    conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (:k)", {"k": "a"})
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO t VALUES (:k)", {"k": "a"})


def test_first_row_reads_a_tuple_and_raises_what_execute_raises(conn):
    """``Connection.first_row`` (a claim's hot path, issue 24) must be
    ``execute(...).fetchone()`` in all it answers. Bugs: a None parameter
    left untyped (the server cannot type ``$1 IS NULL``); a broken unique
    key reaching the caller as psycopg's error, not sqlite3's; an error the
    adapter does not translate (division by zero) turned into a TypeError
    (``raise None from error``) instead of passed on as psycopg's own."""
    import psycopg

    conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v DOUBLE PRECISION)")
    conn.execute("INSERT INTO t VALUES (:k, :v)", {"k": "a", "v": 1.5})
    assert conn.first_row("SELECT k, v FROM t WHERE (:w IS NULL OR k = :w)",
                          {"w": None}) == ("a", 1.5)
    assert conn.first_row("SELECT k FROM t WHERE k = :k", {"k": "b"}) is None
    [missing] = conn.first_row("SELECT :w IS NULL", {"w": None})  # no column
    assert missing is True  # to type it by: None must go in as NULL itself
    with pytest.raises(sqlite3.IntegrityError):
        conn.first_row("INSERT INTO t VALUES (:k, 0) RETURNING k", {"k": "a"})
    with pytest.raises(psycopg.errors.DivisionByZero):
        conn.first_row("SELECT 1 / :zero", {"zero": 0})


def test_commit_after_a_failed_statement_is_refused_not_silent(conn):
    conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    with pytest.raises(sqlite3.OperationalError, match="aborted"):
        with store.immediate(conn):
            conn.execute("INSERT INTO t VALUES (:k)", {"k": "kept?"})
            try:
                conn.execute("INSERT INTO t VALUES (:k)", {"k": "kept?"})
            except sqlite3.IntegrityError:
                pass  # swallowed: PostgreSQL has aborted the transaction
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0


def test_require_refuses_a_store_that_is_not_installed(pg_url, conn):
    url, schema = pg_url
    with pytest.raises(store.StoreMissing, match="work"):
        store.connect(address(url, schema), require=("work",))
    tables = conn.execute("SELECT count(*) FROM information_schema.tables"
                          " WHERE table_schema = :schema", {"schema": schema})
    assert tables.fetchone()[0] == 0  # refused, and nothing was created
    claims.install(conn)
    store.connect(address(url, schema), require=("work",)).close()


def test_immediate_is_one_writer_at_a_time_and_shared_waits_for_it(pg_url):
    url, schema = pg_url
    first, second = (pgstore.connect(url, schema=schema) for _ in range(2))
    second.raw.execute("SET lock_timeout = 200")
    try:
        with store.immediate(first):  # one writer: the store lock EXCLUSIVE
            for shared in (False, True):
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    with store.immediate(second, shared=shared):
                        pass
        with store.immediate(first, shared=True):  # two hot paths: both in
            with store.immediate(second, shared=True):
                pass
    finally:
        first.close()
        second.close()


# --- the claim and the fence on a server ------------------------------------
# (the race of 8 worker processes on one queue, counted from rows, is
# tests/claims/test_concurrency.py, which runs on both backends)

def test_a_lease_is_judged_by_the_servers_clock_not_the_workers(conn, monkeypatch):
    queue(conn, ["s0"])
    holder = claims.claim(conn, "holder", ttl=60)
    # a worker whose clock runs an hour fast would see that lease as lapsed
    monkeypatch.setattr(time, "time", lambda real=time.time: real() + 3600)
    assert claims.claim(conn, "skewed", ttl=60) is None
    assert holder.expires - conn.server_time() > 50  # the server's hour, not ours
    fence.finish(conn, holder, claims.DONE, "done")  # its lease still holds
    # and what it queues is queued at the server's time: oldest first holds
    late = claims.enqueue(conn, "phone:late", "s1", "restock")
    assert claims.work_row(conn, late)["created"] < conn.server_time() + 1


def test_a_claim_begins_at_its_grant_not_before_a_write_it_waited_for(pg_url,
                                                                      conn):
    """Claimers run side by side: between a claim's first read of the clock
    and its grant, the holder before it may finish. The claims row must not
    say the claim began before that finish."""
    url, schema = pg_url
    queue(conn, ["s0", "s0"])
    first = claims.claim(conn, "first", ttl=60)
    other, finished = pgstore.connect(url, schema=schema), []
    real = other.execute

    def finish_first_meanwhile(sql, parameters=None):  # after the clock, before
        if "WITH first AS" in sql and not finished:  # the pick: the holder ends
            finished.append(fence.finish(conn, first, claims.DONE, "done"))
        return real(sql, parameters)

    other.execute = finish_first_meanwhile
    try:  # a pass that sends its statements one by one (the ordinary pass is
        # one function call: no gap a test can reach; it runs the same GRANT)
        second = claims.claim(other, "second", ttl=60, among="SELECT id FROM work")
    finally:
        other.close()
    assert (second.id, finished) == ("work-1", [None])
    began, ended = conn.execute(
        "SELECT c.claimed_at, w.finished FROM claims AS c, work AS w"
        " WHERE c.work_id = 'work-1' AND w.id = 'work-0'").fetchone()
    assert began >= ended
    assert second.expires == pytest.approx(began + 60)


def test_a_superseded_holder_is_refused_by_the_fence(conn):
    queue(conn, ["s0"])
    old = claims.claim(conn, "old", ttl=0.3)
    # the server's clock passes the lease, waited for on that clock (a sleep
    # on ours says nothing of a reader's own server, whose clock may differ)
    wait_until(lambda: store.now(conn) > old.expires, 30,
               what="the server's clock past the old lease")
    new = claims.claim(conn, "new", ttl=60)
    assert (new.id, new.generation) == (old.id, old.generation + 1)
    with pytest.raises(StaleClaim, match="superseded"):
        fence.finish(conn, old, claims.DONE, "late")
    fence.finish(conn, new, claims.DONE, "on time")
    assert conn.execute("SELECT outcome FROM work").fetchone()[0] == "on time"


def test_a_fenced_write_holds_its_row_so_no_claim_lands_before_its_commit(pg_url,
                                                                          conn):
    url, schema = pg_url
    queue(conn, ["s0"])
    holder = claims.claim(conn, "holder", ttl=0.5)
    other = pgstore.connect(url, schema=schema)
    try:
        with pytest.raises(StaleClaim, match="lease expired at commit"):
            with fence.fenced(conn, holder, "observe"):  # checked: the lease is live
                # a slow writer: its lease runs out mid-transaction (the
                # server's clock, waited for: no sleep decides it)
                wait_until(lambda: other.server_time() > holder.expires, 10.0,
                           interval=0.01, what="the server's clock past the lease")
                assert claims.claim(other, "taker", ttl=60) is None  # row held
                conn.execute("UPDATE work SET outcome = 'written' WHERE id = :id",
                             {"id": holder.id})
        assert claims.claim(other, "taker", ttl=60).generation == 2  # now
        # and the slow write did not commit after its lease (issue 29)
        assert claims.work_row(other, holder.id)["outcome"] is None
    finally:
        other.close()


def decide(conn, looks: str = "queued") -> object:
    """A claim caught mid-way: its pick (and its session's lock), not granted."""
    rules = {"role": "shop", "now": conn.server_time(), "passed": [],
             "work_id": None, "store_lock": conn.store_lock}
    return conn.execute(claims_postgres.decide_sql(
        claims.ORDINARY, looks, False, False, None), rules).fetchone()


def test_a_claimer_passes_a_session_another_claimer_is_deciding(pg_url, conn):
    url, schema = pg_url
    queue(conn, ["s0", "s0"])  # two turns of one session
    other = pgstore.connect(url, schema=schema)
    try:
        with store.immediate(conn, shared=True):
            picked = decide(conn)
            assert (picked["id"], picked["session_free"]) == ("work-0", True)
            # work-0's session is being decided: even named, work-1 waits
            assert claims.claim(other, "second", ttl=60, work_id="work-1") is None
    finally:
        other.close()


def test_a_claimer_never_skips_a_locked_turn_to_take_the_next_of_its_session(
        pg_url, conn):
    url, schema = pg_url
    queue(conn, ["s0", "s0", "s1"])
    other = pgstore.connect(url, schema=schema)
    try:
        with store.immediate(conn, shared=True):  # work-0's row locked, as a
            conn.execute("SELECT 1 FROM work WHERE id = 'work-0' FOR UPDATE")
            taken = claims.claim(other, "second", ttl=60)  # slow claimer would
            assert taken.id == "work-2"  # s1's turn; s0's second turn waits
    finally:
        other.close()


def test_nor_past_a_locked_turn_whose_lease_ran_out(pg_url, conn):
    url, schema = pg_url
    queue(conn, ["s0", "s0"])
    lapsed = claims.claim(conn, "gone", ttl=0.2)  # work-0, its holder gone
    wait_until(lambda: store.now(conn) > lapsed.expires, 30,  # by the server's
               what="the server's clock past the lapsed lease")  # clock
    other = pgstore.connect(url, schema=schema)
    try:
        with store.immediate(conn, shared=True):  # work-0 being reclaimed
            conn.execute("SELECT 1 FROM work WHERE id = :id FOR UPDATE",
                         {"id": lapsed.id})
            assert claims.claim(other, "second", ttl=60) is None  # work-1 waits
        assert claims.claim(other, "second", ttl=60).id == lapsed.id
    finally:
        other.close()


def test_the_grant_reads_the_session_rule_again(conn):
    queue(conn, ["s0", "s0"])
    first = claims.claim(conn, "first", ttl=60)
    assert first.id == "work-0"
    # as if a pick had read the session before that commit
    granted = conn.execute(claims_postgres.GRANT, {
        "id": "work-1", "owner": "second", "now": conn.server_time(), "at": None,
        "ttl": 60.0})
    assert granted.fetchone() is None  # a live holder in s0: refused
    assert conn.execute("SELECT count(*) FROM claims").fetchone()[0] == 1


@pytest.mark.parametrize("planned_on", ["a small table", "statistics of no holder"])
def test_a_claim_reads_a_few_rows_however_many_leases_are_live(conn, planned_on):
    """Plans are made once per connection, while the table is small, or while
    its statistics say nothing is held; then 1,000 leases go live. A claim
    must still read a few index entries, not every live lease."""
    queue(conn, [f"s{i}" for i in range(20 if planned_on == "a small table" else 1000)])
    if planned_on != "a small table":
        conn.execute("ANALYZE work")
    for _ in range(10):  # past psycopg's 5 runs: the statements are prepared
        claims.claim(conn, "early", ttl=600)
    conn.execute(
        "INSERT INTO work (id, origin, session, prompt, subject, role, created,"
        " status, owner, generation, expires) SELECT 'held-' || n, 'held-' || n,"
        " 'held-' || n, 'x', '', 'shop', n, 'RUNNING', 'holder', 1,"
        " extract(epoch FROM now()) + 600 FROM generate_series(1, 1000) AS n")
    conn.execute(
        "INSERT INTO work (id, origin, session, prompt, subject, role, created)"
        " SELECT 'queued-' || n, 'queued-' || n, 'queued-' || n, 'x', '', 'shop',"
        " 2000 + n FROM generate_series(1, 100) AS n")
    before = rows_read(conn)
    for _ in range(20):
        assert claims.claim(conn, "w", ttl=600) is not None
    per_claim = (rows_read(conn) - before) / 20
    assert per_claim < 40, per_claim
    # and the pick and the grant, inside the claim's function, are planned
    # once per connection (generic), not at every claim
    assert conn.execute(
        "SELECT 'plan_cache_mode=force_generic_plan' = ANY (proconfig)"
        " FROM pg_proc WHERE proname = :name",
        {"name": claims_postgres.FUNCTION}).fetchone()[0] is True


# --- two hosts --------------------------------------------------------------

NO_NETNS = hosts.unavailable()  # asked once: it tries a namespace for real
needs_netns = pytest.mark.skipif(NO_NETNS is not None,
                                 reason=f"no network namespaces: {NO_NETNS}")


@needs_netns
def test_a_cut_host_is_silent_and_comes_back_and_killing_it_leaves_nothing():
    probe = "import socket, sys; socket.create_connection((sys.argv[1], 9), timeout=1)"
    with hosts.hosts(("a", "b")) as (a, b):
        assert a.mode == b.mode == hosts.NETNS and a.gateway != b.gateway
        sleepers = [hosts.run(a, ["sleep", "60"]) for _ in range(3)]
        hosts.cut(a)
        silent = hosts.run(a, [sys.executable, "-c", probe, a.gateway],
                           stderr=subprocess.PIPE, text=True)
        assert "timed out" in silent.communicate(timeout=10)[1]  # dropped, no answer
        answered = hosts.run(b, [sys.executable, "-c", probe, b.gateway],
                             stderr=subprocess.PIPE, text=True)
        assert "refused" in answered.communicate(timeout=10)[1]  # b still reaches it
        hosts.restore(a)
        assert hosts.kill_host(a) == 3
        assert all(s.returncode == -signal.SIGKILL for s in sleepers)
        names = a.netns
    assert names not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                       text=True).stdout


@pytest.fixture
def two_hosts_and_server():
    """Hosts a and b, and a server of their own listening on both gateways."""
    with hosts.hosts(("a", "b")) as pair:
        server = postgres_server.start(listen=("127.0.0.1", *(h.gateway for h in pair)))
        try:
            pgstore.create_schema(server.url, "shop")
            yield pair, server, pgstore.connect(server.url, schema="shop")
        finally:
            postgres_server.stop(server)


def start_on(host, server, owner: str, *args: str) -> subprocess.Popen:
    url = server.url_for(host.gateway)  # over TCP, through the host's own link
    return hosts.run(host, [sys.executable, "-c", WORKER, address(url, "shop"),
                            owner, *args], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def first_line(process: subprocess.Popen, timeout: float) -> str:
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, f"no line from pid {process.pid} within {timeout} s"
    return process.stdout.readline().strip()


@needs_netns
def test_workers_on_two_hosts_claim_one_queue_and_nothing_twice(two_hosts_and_server):
    (a, b), server, conn = two_hosts_and_server
    queue(conn, [f"s{i % 50}" for i in range(300)])
    workers = [start_on(host, server, f"{host.name}{n}", "drain-on-go")
               for host in (a, b) for n in range(4)]
    # The parent's barrier: each racer holds a first turn and says so before
    # any is let go, so no host drains the queue before the other has started
    # (issue 36: host a finished everything while host b was still starting).
    for worker in workers:
        said = first_line(worker, 60)
        assert said == "ready", (said, worker.stderr.read()[-800:])
    for worker in workers:
        worker.stdin.write("go\n")
        worker.stdin.flush()
    outputs = [w.communicate(timeout=120) for w in workers]
    assert [w.returncode for w in workers] == [0] * 8, [o[1][-800:] for o in outputs]
    # durable rows, not the workers' counts: who claimed what, and how it ended
    per_worker = {row["owner"]: row["n"] for row in conn.execute(
        "SELECT owner, count(*) AS n FROM claims GROUP BY 1 ORDER BY 1")}
    assert sorted(per_worker) == [f"{h}{n}" for h in "ab" for n in range(4)]
    assert sum(per_worker.values()) == 300
    assert conn.execute("SELECT count(*) FROM work WHERE status = :done",
                        {"done": claims.DONE}).fetchone()[0] == 300
    assert double_claims(conn) == {"work": 0, "session": 0}
    conn.close()


@needs_netns
def test_a_partitioned_holders_late_write_is_refused_when_its_link_returns(
        two_hosts_and_server):
    (a, b), server, conn = two_hosts_and_server
    queue(conn, ["s0"])
    holder = start_on(a, server, "holder", "late", "1.0", "go")
    assert first_line(holder, 30).startswith("claimed work-0 1")
    hosts.cut(a)
    holder.stdin.write("go\n")  # its finish now goes into the void (a pipe is
    holder.stdin.flush()         # not the network: the line reaches it)
    expires = conn.execute("SELECT expires FROM work").fetchone()["expires"]
    wait_until(lambda: store.now(conn) > expires, 30,  # the lease runs out, waited
               what="the server's clock past the holder's lease")  # for by us
    taker = start_on(b, server, "taker", "hold")
    assert taker.communicate(timeout=30)[0].strip() == "1"
    hosts.restore(a)  # the retransmitted finish arrives now, late
    assert holder.communicate(timeout=30)[0].strip() == "refused: superseded"
    row = conn.execute("SELECT owner, generation, status FROM work").fetchone()
    assert tuple(row) == ("taker", 2, "RUNNING")
    conn.close()


HOLDER_MID_WRITE = """
import sys, time
from crashcourse import claims, store
from crashcourse.claims import fence
conn = store.connect(sys.argv[1])
held = claims.claim(conn, "holder", ttl=1.0)
try:
    with fence.fenced(conn, held, "observe"):  # checked, the row locked
        print("checked", flush=True)
        # cut off here, between its check and its write: the parent's line
        # comes once the link is down (a pipe is not the network), so the
        # write is sent into the cut, never before it (was a 0.5 s sleep)
        sys.stdin.readline()
        conn.execute("UPDATE work SET outcome = 'late' WHERE id = :id", {"id": held.id})
    print("committed", flush=True)
except Exception as lost:
    print(type(lost).__name__, flush=True)
"""


@needs_netns
def test_a_holder_cut_off_mid_write_is_ended_by_the_server_and_its_write_lost(
        two_hosts_and_server):
    (a, b), server, conn = two_hosts_and_server
    queue(conn, ["s0"])
    url = address(server.url_for(a.gateway), "shop")
    holder = hosts.run(a, [sys.executable, "-c", HOLDER_MID_WRITE, url],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert first_line(holder, 30) == "checked"  # it holds the row lock now
    hosts.cut(a)
    holder.stdin.write("write\n")  # now: its UPDATE goes into the cut
    holder.stdin.flush()
    began = time.monotonic()
    taken = wait_until(lambda: claims.claim(conn, "taker", ttl=60), 10, interval=0.1,
                       what="the taker's claim, once the server ended the holder")
    waited = time.monotonic() - began
    assert taken is not None and taken.generation == 2
    assert waited >= pgstore.IDLE_IN_TRANSACTION_MS / 1000 - 0.5  # not before
    hosts.restore(a)
    assert holder.communicate(timeout=30)[0].strip() == "OperationalError"
    row = conn.execute("SELECT owner, outcome FROM work").fetchone()
    assert tuple(row) == ("taker", None)  # the late write never landed
    conn.close()


def state_of(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def test_without_namespaces_a_cut_host_is_frozen_and_thawed():
    with hosts.hosts(("a",), isolate=False) as (a,):
        assert (a.mode, a.gateway) == (hosts.FROZEN, "127.0.0.1")
        sleeper = hosts.run(a, ["sleep", "60"])
        hosts.cut(a)
        assert state_of(sleeper.pid) == "T"  # stopped: the process-pause case
        hosts.restore(a)
        assert state_of(sleeper.pid) not in "Tt"  # running or sleeping again
        hosts.cut(a)  # killed while frozen: SIGKILL still ends it
        assert hosts.kill_host(a) == 1 and sleeper.returncode == -signal.SIGKILL


# --- issue 23: each fails on its one-line mutant ---------------------------------


def test_create_schema_gives_a_fresh_empty_one_even_over_an_old_one(pg_url):
    """Bug: ``create_schema`` without its ``DROP SCHEMA IF EXISTS``: a name
    used before is refused, or its old tables read as the new store's."""
    url, schema = pg_url
    old = pgstore.connect(url, schema=schema)
    try:
        fence.install(old)
        assert store.table_exists(old, "work")
    finally:
        old.close()
    pgstore.create_schema(url, schema)
    fresh = pgstore.connect(url, schema=schema)
    try:
        assert not store.table_exists(fresh, "work")
    finally:
        fresh.close()


@pytest.mark.parametrize("schema", ["bad name", "x;drop", "1st", ""])
def test_a_schema_name_that_is_not_an_identifier_is_refused_before_connecting(
        schema):
    """Bug: ``connect`` without its ``raise`` for a schema that is not an
    identifier: it would go into the server's options as written."""
    with pytest.raises(ValueError, match="not a schema name"):
        pgstore.connect("postgresql://nobody@127.0.0.1:9/none", schema=schema)


def test_closing_a_store_connection_ends_its_server_session(pg_server):
    """Bug: ``Connection.close`` without closing the psycopg connection: every
    ``store.opened`` leaves a server session behind, until the server's
    connection limit refuses the next worker."""
    def sessions() -> int:
        with pgstore.connect(pg_server.url).raw as raw:
            return raw.execute("SELECT count(*) FROM pg_stat_activity"
                               " WHERE application_name = 'closing-test'"
                               ).fetchone()[0]

    conn = pgstore.connect(pg_server.url)
    conn.raw.execute("SET application_name = 'closing-test'")
    assert sessions() == 1
    conn.close()
    assert conn.raw.closed
    wait_until(lambda: sessions() == 0, 60.0, what="the closed session gone")
