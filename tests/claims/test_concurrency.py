"""Real worker processes drain a queue (chapter 05): eight of them 1,000
assignments over 250 sessions, and four of them a session 1,000 turns deep.

Every item must be granted exactly one claim (generation 1: with a 60 s lease
nothing expires, so a second claim would mean a double claim), finished once,
and within a session the claims must never overlap in time. Both run on a
SQLite file and on a PostgreSQL store (``store_at``), where the workers claim
side by side instead of one writer at a time (chapter 10): the race, counted
from the rows.
"""

from __future__ import annotations

import json

from crashcourse import claims
from crashcourse.claims import fence
from crashcourse.lab.harness import Harness
from crashcourse.store import immediate, opened

WORKERS, ITEMS, SESSIONS = 8, 1000, 250


def queue(db, sessions: list[str]) -> None:
    """One turn per entry, in this order, straight into work (setup, not test)."""
    with opened(db) as conn:
        fence.install(conn)
        with immediate(conn):
            for i, session in enumerate(sessions):
                conn.execute(
                    "INSERT INTO work (id, origin, session, prompt, subject, role,"
                    " created) VALUES (:id, :origin, :session, 'restock', '', 'shop',"
                    " :i)", {"id": claims.work_id_for(f"o{i}"), "origin": f"o{i}",
                             "session": session, "i": i})


def drain(db, workers: int) -> list:
    with Harness() as harness:
        started = [harness.start(["-m", "crashcourse.workers.shop_worker", "drain",
                                  "--db", db, "--owner", f"w{n}", "--ttl", "60"])
                   for n in range(workers)]
        done = [w.finish(timeout=120) for w in started]
    assert [d.returncode for d in done] == [0] * workers, done[0].stderr
    return done


def test_eight_processes_never_share_an_item(store_at):
    db = store_at("agent")
    queue(db, [f"s{i % SESSIONS}" for i in range(ITEMS)])
    done = drain(db, WORKERS)
    reported = sum(json.loads(d.stdout)["finished"] for d in done)
    with opened(db) as conn:
        per_item = conn.execute(
            "SELECT w.status, w.generation, count(c.generation) AS claims,"
            " (SELECT count(*) FROM transcript t WHERE t.work_id = w.id) AS finishes"
            " FROM work w LEFT JOIN claims c ON c.work_id = w.id GROUP BY w.id"
        ).fetchall()
        spans = conn.execute(
            "SELECT w.session, c.claimed_at, w.finished FROM claims c"
            " JOIN work w ON w.id = c.work_id ORDER BY w.session, c.claimed_at"
        ).fetchall()
        owners = conn.execute("SELECT count(DISTINCT owner) FROM claims").fetchone()
    assert len(per_item) == ITEMS
    assert {tuple(row) for row in per_item} == {("DONE", 1, 1, 1)}
    assert reported == ITEMS
    assert owners[0] > 1  # the work really was shared out
    for before, after in zip(spans, spans[1:], strict=False):
        if before["session"] == after["session"]:
            assert after["claimed_at"] >= before["finished"]


# How deep the session is. On a server a claim still reads, row by row, the
# queued turns of a held session in front of the queue (SQLite's walk,
# crashcourse.claims.turns, skips them), so 1,000 turns there cost ~10 s: 300 are
# enough to catch a claimer taking a session's turns out of order.
DEPTH = {"sqlite": 1000, "postgres": 300}


def test_a_session_thousands_of_turns_deep_is_served_one_turn_at_a_time(
        store_at, backend):
    """1,000 turns of one session queued first, 200 other sessions behind:
    four processes take every turn once, and the deep session's turns one
    after another, in the order they were queued."""
    db, depth = store_at("agent"), DEPTH[backend]
    queue(db, ["deep"] * depth + [f"s{i}" for i in range(200)])
    drain(db, 4)
    with opened(db) as conn:
        assert conn.execute("SELECT count(*), min(generation), max(generation)"
                            " FROM work WHERE status = 'DONE'").fetchone()[:] == (
                                depth + 200, 1, 1)
        deep = conn.execute(
            "SELECT w.created, c.claimed_at, w.finished FROM claims c"
            " JOIN work w ON w.id = c.work_id WHERE w.session = 'deep'"
            " ORDER BY c.claimed_at").fetchall()
    assert [row["created"] for row in deep] == list(range(depth))  # queue order
    for before, after in zip(deep, deep[1:], strict=False):
        assert after["claimed_at"] >= before["finished"]
