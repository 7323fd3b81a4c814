"""Eight real worker processes drain 1,000 assignments (chapter 05).

Every item must be granted exactly one claim (generation 1: with a 60 s lease
nothing expires, so a second claim would mean a double claim), finished once,
and within a session the claims must never overlap in time.
"""

from __future__ import annotations

import json

from crashcourse import claims, fence
from crashcourse.harness import Harness
from crashcourse.store import immediate, opened

WORKERS, ITEMS, SESSIONS = 8, 1000, 250


def test_eight_processes_never_share_an_item(tmp_path):
    db = tmp_path / "agent.db"
    with opened(db) as conn:
        fence.install(conn)
        with immediate(conn):  # one transaction: queueing is setup, not the test
            for i in range(ITEMS):
                conn.execute(
                    "INSERT INTO work (id, origin, session, prompt, subject, role,"
                    " created) VALUES (:id, :origin, :session, 'restock', '', 'shop',"
                    " :i)", {"id": claims.work_id_for(f"o{i}"), "origin": f"o{i}",
                             "session": f"s{i % SESSIONS}", "i": i})
    with Harness() as harness:
        workers = [harness.start(["-m", "crashcourse.workers.shop_worker", "drain",
                                  "--db", str(db), "--owner", f"w{n}", "--ttl", "60"])
                   for n in range(WORKERS)]
        done = [w.finish(timeout=120) for w in workers]
    assert [d.returncode for d in done] == [0] * WORKERS, done[0].stderr
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
