"""Claims at depth (chapter 05): thousands of rows, checked against a plain model.

``claims.claim`` finds the next turn through ``crashcourse.claims.turns`` (a walk over
free sessions and lapsed leases) instead of reading every open row. These
tests hold it to chapter 05's rule written out in plain Python over EVERY row
of ``work`` (``expected``): one live holder per session, control work first,
then the oldest (then the first queued), retry delays, leases. The databases
hold thousands of rows: a session with thousands of turns behind one running
turn, thousands of live claims with lapsed leases among them, random mixes.
Cost is counted in SQLite VM instructions, never in time. The rule runs on
both backends (``conn``: a server's claim is ``claims.postgres``); the walk's
own table, its cost and its query plans are SQLite's.
"""

from __future__ import annotations

import random
import re

import pytest

from crashcourse import claims, store
from crashcourse.claims import fence, orders, turns
from crashcourse.store import immediate, opened
from crashcourse.store.dialect import SQLITE

T0 = 1_000_000.0
ROW = ("INSERT INTO work (id, origin, session, prompt, subject, role, control,"
       " created, status, owner, generation, expires, available_after) VALUES"
       " (:id, :id, :session, 'restock', '', :role, :control, :created, :status,"
       " :owner, :generation, :expires, :available_after)")
ANY_ROW = "SELECT id FROM work ORDER BY id LIMIT 1 OFFSET :k"  # k: the test's rng


def any_row(conn, rng: random.Random) -> str:
    """A work id the test's seeded ``rng`` picks: the same on both backends
    and in every run (the database's random() made each run its own)."""
    count = conn.execute("SELECT count(*) AS n FROM work").fetchone()["n"]
    return conn.execute(ANY_ROW, {"k": rng.randrange(count)}).fetchone()["id"]


# ``conn`` (tests/conftest.py): a fresh store on each backend, with these:
pytestmark = pytest.mark.installs.with_args(orders.install)


def add(conn, rows: list[dict]) -> None:
    """Rows of ``work`` as a caller left them: queued, held, lapsed, ended."""
    start = conn.execute("SELECT count(*) FROM work").fetchone()[0]
    with immediate(conn):
        for n, row in enumerate(rows, start):
            conn.execute(ROW, {"id": f"w{n:06d}", "role": "shop", "control": 0,
                               "status": claims.READY, "owner": None,
                               "generation": 0, "expires": None,
                               "available_after": 0.0} | row)


def held(session: str, created: float, expires: float) -> dict:
    return {"session": session, "created": created, "status": claims.RUNNING,
            "owner": "earlier", "generation": 1, "expires": expires}


def turns_of(conn) -> list[tuple]:
    """Every row of work as a plain tuple (fast enough to read at every step),
    first its place in the queue (SQLite's rowid, a server's ``seq``)."""
    query = (f"SELECT {store.dialect(conn).insertion_order}, id, session, role,"
             " control, created, status, expires, available_after FROM work")
    if store.dialect(conn) is not SQLITE:
        return [tuple(row) for row in conn.execute(query)]
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor.execute(query).fetchall()


def expected(conn, now: float, *, role: str = "shop", control_only: bool = False,
             recovery: bool = False) -> str | None:
    """Chapter 05's rule over every row of work (or chapter 06's recovery rule):
    the first in claim order of the turns this pass may take whose session has
    no OTHER turn under a lease that has not run out."""
    rows = turns_of(conn)
    live: dict[str, set] = {}  # session -> its turns under a live lease
    for _, id_, session, _, _, _, status, expires, _ in rows:
        if status == claims.RUNNING and expires is not None and expires > now:
            live.setdefault(session, set()).add(id_)
    uncertain = {row[0] for row in conn.execute(orders.UNCERTAIN_WORK)}
    takeable = {claims.READY, claims.BLOCKED} if recovery else {claims.READY}
    best = None
    for turn, id_, session, row_role, control, created, status, expires, after in rows:
        lapsed = (status == claims.RUNNING and expires is not None
                  and expires <= now)
        if (row_role == role
                and (control == 1 or not control_only)
                and after <= now
                and (status in takeable or lapsed)
                and (id_ in uncertain or not recovery)
                and not live.get(session, set()) - {id_}):
            key = (-control, created, turn)
            if best is None or key < best[0]:
                best = (key, id_)
    return None if best is None else best[1]


def sessions_agree(conn) -> None:
    """``sessions`` says what a recount of ``work`` says, session by session.
    (SQLite's walk keeps ``sessions``; a server's claim needs none.)"""
    if store.dialect(conn) is not SQLITE:
        return
    recount: dict[str, list] = {}
    in_claim_order = sorted(turns_of(conn), key=lambda r: (-r[4], r[5], r[0]))
    for turn, _, session, _, _, _, status, expires, _ in in_claim_order:
        held, until, first = recount.setdefault(session, [0, None, None])
        if status == claims.RUNNING:
            held, until = held + 1, max(until or 0, expires or 0)
        if status == claims.READY and first is None:
            first = turn
        recount[session] = [held, until, first]
    kept = {row["session"]: [row["holders"], row["held_until"], row["next_turn"]]
            for row in conn.execute("SELECT * FROM sessions")}
    assert kept == recount


def vm_steps_per_claim(conn, claims_to_take: int, now: float) -> float:
    """SQLite virtual-machine instructions per claim: cost without a clock."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(count, 1)
    try:
        for _ in range(claims_to_take):
            assert claims.claim(conn, "counted", ttl=60, now=now) is not None
    finally:
        conn.set_progress_handler(None, 1)
    return steps[0] / claims_to_take


def test_a_session_with_thousands_of_queued_turns_is_skipped_in_order(conn):
    """3,000 turns wait behind one running turn; 300 other sessions interleave.
    On a server 300: its claim reads a held session's queued turns one by one
    (chapter 10's evidence limits), so 3,000 cost minutes, not another rule."""
    rng = random.Random(11)
    depth = 3000 if store.dialect(conn) is SQLITE else 300
    rows = [held("busy", 0.0, T0 + 1000)]
    rows += [{"session": "busy", "created": float(n)} for n in range(1, depth + 1)]
    rows += [{"session": f"s{rng.randrange(300)}", "created": rng.uniform(0, 3001)}
             for _ in range(600)]
    add(conn, rows)
    sessions_agree(conn)
    mine = []
    for step in range(0, 400, 2):
        now = T0 + step
        want = expected(conn, now)
        got = claims.claim(conn, f"w{step}", ttl=5, now=now)
        assert (got and got.id) == want, f"step {step}"
        if got is not None:
            mine.append(got)
        for claim in [c for c in mine if c.expires > now and rng.random() < 0.5]:
            fence.finish(conn, claim, claims.DONE, "done", now=now)
            mine.remove(claim)
    # the busy session's lease runs out at T0 + 1000: its turns come back in order
    for step in range(990, 1050):
        want = expected(conn, T0 + step)
        got = claims.claim(conn, "late", ttl=0.5, now=T0 + step)
        assert (got and got.id) == want, f"step {step}"
    sessions_agree(conn)


def test_thousands_of_live_claims_with_lapsed_leases_among_them(conn):
    """3,000 held turns over 1,500 sessions, leases ending over 300 s; queued
    turns behind them and in fresh sessions; control work and retry delays."""
    rng = random.Random(12)
    rows = []
    for n in range(3000):
        rows.append(held(f"s{n % 1500}", rng.uniform(0, 100),
                         T0 + rng.uniform(-100, 200)))
    for _ in range(2000):
        rows.append({"session": f"s{rng.randrange(2000)}",
                     "created": rng.uniform(0, 200),
                     "control": int(rng.random() < 0.05),
                     "available_after": T0 + rng.choice((0, 0, 0, 50, 150)) - 100})
    add(conn, rows)
    sessions_agree(conn)
    mine, now = [], T0 - 100
    while now < T0 + 220:
        want = expected(conn, now)
        got = claims.claim(conn, "w", ttl=rng.choice((1, 5, 30)), now=now)
        assert (got and got.id) == want, f"at {now - T0:+.1f}"
        if got is not None:
            mine.append(got)
        for claim in [c for c in mine if c.expires > now and rng.random() < 0.3]:
            fence.finish(conn, claim, rng.choice((claims.DONE, claims.BLOCKED)),
                         "x", now=now)
            mine.remove(claim)
        now += rng.uniform(0, 3)
    sessions_agree(conn)


def test_random_writes_of_every_kind_follow_the_model(conn):
    """Enqueue, claim (any role, control only, one named turn), finish DONE or
    BLOCKED, cancel, sign-off's return to READY, direct UPDATEs: 800 steps."""
    rng = random.Random(13)
    add(conn, [{"session": f"s{rng.randrange(400)}", "created": rng.uniform(0, 50),
                "role": rng.choice(("shop", "shop", "office")),
                "control": int(rng.random() < 0.1)} for _ in range(2000)])
    now, mine = T0, []
    for step in range(800):
        now += rng.choice((0.0, 0.1, 1.0, 3.0))
        move = rng.random()
        if move < 0.45:
            role, only = rng.choice(("shop", "office")), rng.random() < 0.1
            want = expected(conn, now, role=role, control_only=only)
            got = claims.claim(conn, "w", ttl=rng.choice((1, 4)), now=now,
                               role=role, control_only=only)
            assert (got and got.id) == want, f"step {step}"
            mine += [got] if got else []
        elif move < 0.55:  # a claim of one named turn: its rule, nothing else
            got = claims.claim(conn, "w", ttl=2, now=now, work_id=any_row(conn, rng))
            if got is not None:
                mine.append(got)
        elif move < 0.75 and (live := [c for c in mine if c.expires > now]):
            claim = rng.choice(live)
            fence.finish(conn, claim, rng.choice((claims.DONE, claims.BLOCKED)),
                         "x", now=now)
            mine.remove(claim)
        elif move < 0.8:
            cancelled = any_row(conn, rng)
            fence.cancel(conn, cancelled, now=now)
            for claim in [c for c in mine if c.id == cancelled]:  # superseded:
                with pytest.raises(fence.StaleClaim):  # it writes nothing now
                    fence.finish(conn, claim, claims.DONE, "x", now=now)
                mine.remove(claim)
        elif move < 0.9:  # back to READY (as a sign-off does), the delay kept
            conn.execute(f"UPDATE work SET status = '{claims.READY}'"
                         f" WHERE status = '{claims.BLOCKED}' AND id IN"
                         " (SELECT id FROM work ORDER BY random() LIMIT 3)")
        else:
            add(conn, [{"session": f"s{rng.randrange(450)}", "created": now - T0,
                        "control": int(rng.random() < 0.1)}])
        if step % 200 == 0:
            sessions_agree(conn)
    sessions_agree(conn)


def test_the_recovery_pass_at_depth_follows_its_rule(conn):
    """4,000 turns, a third with an order in any status: the recovery pass
    takes exactly what chapter 06's rule admits, in claim order."""
    rng = random.Random(14)
    statuses = (claims.READY, claims.BLOCKED, claims.RUNNING, claims.DONE,
                claims.CANCELLED)
    rows = []
    for n in range(4000):
        status = rng.choice(statuses)
        rows.append({"session": f"s{rng.randrange(1500)}", "created": float(n),
                     "status": status,
                     "generation": int(status != claims.READY),
                     "expires": T0 + rng.uniform(-50, 100)
                     if status == claims.RUNNING else None,
                     "available_after": T0 + rng.uniform(-50, 50)})
    add(conn, rows)
    with immediate(conn):
        for n in rng.sample(range(4000), 1300):
            conn.execute("INSERT INTO orders (operation_key, work_id, sku, quantity,"
                         " unit_cents, status) VALUES (:key, :work, 'flour', 1, 100,"
                         " :status)", {"key": f"k{n}", "work": f"w{n:06d}",
                                       "status": rng.choice(orders.STATUSES)})
    now = T0 - 60
    while now < T0 + 120:
        want = expected(conn, now, recovery=True)
        got = orders.claim_recovery(conn, "r", ttl=5, now=now)
        assert (got and got.id) == want, f"at {now - T0:+.1f}"
        now += rng.uniform(0, 3)
    sessions_agree(conn)


def test_a_lease_ends_at_its_expiry_for_the_turns_behind_it_too(conn):
    """At ``expires`` the lease has run out: the holder's turn, and the turns
    queued behind it in its session, may be taken at that very instant."""
    add(conn, [held("a", 0.0, T0 + 10) | {"role": "office"},
               {"session": "a", "created": 1.0},
               {"session": "b", "created": 2.0}])
    assert claims.claim(conn, "w", ttl=5, now=T0 + 9.9).id == "w000002"  # b
    assert claims.claim(conn, "w", ttl=5, now=T0 + 10).id == "w000001"  # a's next
    assert expected(conn, T0 + 10, role="office") is None  # a is held again
    sessions_agree(conn)


def test_a_file_queued_before_the_walk_existed_is_counted_once(tmp_path):
    # SQLite alone: the walk's table and triggers are SQLite's (chapter 05)
    path = tmp_path / "old.db"
    with opened(path) as conn:
        orders.install(conn)
        add(conn, [held("a", 0.0, T0 + 10), {"session": "a", "created": 1.0},
                   {"session": "b", "created": 2.0}])
        for trigger in ("insert", "update", "delete"):  # as an older runtime left it
            conn.execute(f"DROP TRIGGER sessions_follow_{trigger}")
        conn.execute("DROP TABLE sessions")
        add(conn, [{"session": "c", "created": 0.5}])
    with opened(path) as conn:
        orders.install(conn)
        sessions_agree(conn)
        assert expected(conn, T0) == "w000003"  # c: a is held, and b is newer
        assert claims.claim(conn, "w", ttl=5, now=T0).id == "w000003"
        orders.install(conn)  # a second install counts nothing twice
        sessions_agree(conn)


@pytest.mark.parametrize("depth", ["live", "blocked"])
def test_a_claim_costs_the_same_with_5000_rows_waiting(tmp_path, depth):
    """VM instructions per claim: 5,000 live claims, or 5,000 turns behind one
    running turn, against the empty queue; within the book's 1.25x.
    SQLite alone: its VM instructions are the measure."""
    cost = {}
    for rows_waiting in (0, 5000):
        with opened(tmp_path / f"{depth}-{rows_waiting}.db") as conn:
            fence.install(conn)
            if depth == "live":
                waiting = [held(f"held-{n}", float(n), T0 + 100)
                           for n in range(rows_waiting)]
            else:
                waiting = [held("busy", 0.0, T0 + 100)] if rows_waiting else []
                waiting += [{"session": "busy", "created": 1.0 + n}
                            for n in range(rows_waiting)]
            add(conn, waiting + [{"session": f"new-{n}", "created": 1e5 + n}
                                 for n in range(60)])
            cost[rows_waiting] = vm_steps_per_claim(conn, 50, T0)
    assert cost[5000] <= 1.25 * cost[0], cost


@pytest.mark.sqlite_only("SQLite's query plans of SQLite's own claim SQL")
def test_no_query_of_a_claim_reads_work_row_by_row(conn):
    """Every read a claim makes is an index search; the only scans are of the
    candidate list and of the free sessions' index (the walk stops at its
    first fit)."""
    now = {"now": T0, "session": "s", "status": claims.READY, "role": "shop",
           "work_id": None, "control_only": 0, "candidates": "[1, 2]"}
    queries = [claims.PICK.format(eligible=claims.ORDINARY),
               claims.PICK.format(eligible=orders.RECOVERY),
               turns.FIRST_TURNS, turns.SESSION_TURNS,
               turns.RECOUNT + " WHERE session = :session",
               f"SELECT rowid FROM work WHERE id IN ({orders.UNCERTAIN_WORK})"]
    for query in queries:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query, now)]
        scans = [line for line in plan if line.startswith("SCAN")]
        walks = r"SCAN (json_each|sessions USING INDEX sessions_free_in_order)"
        assert all(re.match(walks, line) for line in scans), (query, plan)
