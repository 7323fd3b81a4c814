"""The free turns, in claim order: where ``claims.claim`` looks (chapter 05).

A claim takes the first eligible turn in claim order (operator control work
first, then the oldest) whose session has no live holder. Walking ``work`` in
that order and asking each row about its session reads every turn that waits
behind a held one: 8,000 turns queued behind one running turn made every
claim, for any session, read 8,000 rows. So the walk never meets them:

* ``sessions`` keeps, per session, how many of its turns are RUNNING
  (``holders``), when the last of their leases runs out (``held_until``) and
  its first READY turn in claim order. Triggers on ``work`` recount a session
  inside the transaction of every write that changes one of its turns
  (claim, finish, cancel, sign-off, a direct UPDATE), so it never disagrees
  with the rows.
* Free sessions (no holder) are walked by their first turn, through one index.
* A lease that runs out writes nothing. A session whose leases have all run
  out (``held_until <= now``) is free again; those sessions are found through
  an index on ``held_until`` and offer their first RUNNING turn (its lease
  has lapsed) and their first READY turn.
* A session's later turns are read only when the walk gets past its first
  (the pass's own rule refused it), through ``claims``' ``work_in_session``.

The walk only proposes; ``claims.PICK`` still applies every rule to what it
proposes. A claim reads O(log n) of the queue, the live claims and a held
session's backlog, plus one index entry per session whose leases have all run
out (about one per dead worker) and a step per turn the pass refuses.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from itertools import islice

from crashcourse.claims.work import READY, RUNNING  # an open turn: queued, or held
from crashcourse.store import check_backend, immediate, table_exists
from crashcourse.store.dialect import SQLITE

# The databases install() accepts (store.check_backend): a store on any other
# is refused before anything is written.
RUNS_ON = (SQLITE,)

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session      TEXT PRIMARY KEY,
    holders      INTEGER NOT NULL DEFAULT 0,  -- its RUNNING turns, live or lapsed
    held_until   REAL,     -- when the last of their leases runs out
    next_turn    INTEGER,  -- rowid of its first READY turn in claim order, or NULL
    next_control INTEGER,  -- that turn's control and created: the walk's order
    next_created REAL
);
-- the walk: sessions nobody holds, by their first turn, in claim order
CREATE INDEX IF NOT EXISTS sessions_free_in_order
    ON sessions (next_control DESC, next_created, next_turn)
    WHERE holders = 0 AND next_turn IS NOT NULL;
-- held sessions by the end of their last lease: which ones are free again
CREATE INDEX IF NOT EXISTS sessions_held_until
    ON sessions (held_until) WHERE holders > 0
"""

# Count one session again from its rows (index lookups in work_in_session):
# its held turns and their last lease (a RUNNING row without one keeps nobody
# out, as in the session rule), and its first READY turn in claim order.
RECOUNT = f"""
UPDATE sessions SET
    (holders, held_until) = (
        SELECT count(*), max(ifnull(held.expires, 0)) FROM work AS held
        WHERE held.session = sessions.session
          AND held.status = '{RUNNING}'),
    (next_turn, next_control, next_created) = (
        SELECT turn.rowid, turn.control, turn.created FROM work AS turn
        WHERE turn.session = sessions.session
          AND turn.status = '{READY}'
        ORDER BY turn.control DESC, turn.created, turn.rowid LIMIT 1)"""

# Any write that changes a turn's status, lease or place in the order recounts
# its session, in the same transaction. A body holds ';': each is made alone.
TRIGGERS = (f"""
CREATE TRIGGER IF NOT EXISTS sessions_follow_insert AFTER INSERT ON work BEGIN
    INSERT OR IGNORE INTO sessions (session) VALUES (NEW.session);
    {RECOUNT} WHERE session = NEW.session;
END""", f"""
CREATE TRIGGER IF NOT EXISTS sessions_follow_update
AFTER UPDATE OF status, expires, control, created ON work
WHEN OLD.status IS NOT NEW.status
  OR OLD.expires IS NOT NEW.expires
  OR OLD.control IS NOT NEW.control
  OR OLD.created IS NOT NEW.created BEGIN
    {RECOUNT} WHERE session = NEW.session;
END""", f"""
CREATE TRIGGER IF NOT EXISTS sessions_follow_delete AFTER DELETE ON work BEGIN
    {RECOUNT} WHERE session = OLD.session;
END""")

# A file whose work was queued before sessions existed: count it once.
BACKFILL = "INSERT OR IGNORE INTO sessions (session) SELECT DISTINCT session FROM work"

# The walk's rows: a turn, its place in claim order, and (``rest``) which of
# its session's lists goes on after it, when the walk gets past it.
FIRST_TURNS = f"""
-- sessions nobody holds: their first READY turn
SELECT next_turn AS turn, next_control AS control, next_created AS created,
       session, '{READY}' AS rest
FROM sessions
WHERE holders = 0
  AND next_turn IS NOT NULL
UNION ALL
-- sessions whose leases have all run out are free again: their first READY
-- turn, and their first RUNNING turn (its lease has lapsed)
SELECT next_turn, next_control, next_created, session, '{READY}'
FROM sessions
WHERE holders > 0
  AND held_until <= :now
  AND next_turn IS NOT NULL
UNION ALL
SELECT held.rowid, held.control, held.created, held.session, '{RUNNING}'
FROM sessions AS freed
JOIN work AS held ON held.rowid = (
    SELECT first.rowid FROM work AS first
    WHERE first.session = freed.session
      AND first.status = '{RUNNING}'
    ORDER BY first.control DESC, first.created, first.rowid LIMIT 1)
WHERE freed.holders > 0
  AND freed.held_until <= :now
-- in claim order: each part in its own, merged as the walk reads on
ORDER BY control DESC, created, turn
"""
SESSION_TURNS = """
-- one session's turns in one status, in claim order (the rest of a list)
SELECT rowid AS turn, control, created, session, NULL AS rest FROM work
WHERE session = :session
  AND status = :status
ORDER BY control DESC, created, rowid
"""


def install(conn: sqlite3.Connection) -> None:
    """Create ``sessions``, its indexes and the triggers on ``work`` (which
    must exist); a file with work already queued is counted once.

    Introduced in chapter 05."""
    check_backend(conn, RUNS_ON, __name__)
    with immediate(conn):
        new = not table_exists(conn, "sessions")
        for statement in (*SCHEMA.split(";"), *TRIGGERS):
            conn.execute(statement)
        if new:
            conn.execute(BACKFILL)
            conn.execute(RECOUNT)


def claim_order(row: sqlite3.Row) -> tuple:
    """Control work first, then the oldest, then the first queued (chapter 05)."""
    return (-row["control"], row["created"], row["turn"])


def in_claim_order(conn: sqlite3.Connection, now: float,
                   control_only: bool = False) -> Iterator[int]:
    """The rowids of every turn a claim may take at ``now``, in claim order.

    A merge of sorted streams: the sessions' first turns (``FIRST_TURNS``),
    and, once the walk is past one of them, the rest of that session's list.
    Run it inside the claim's transaction; close it before writing (chapter
    05)."""
    cursors = [conn.execute(FIRST_TURNS, {"now": now})]
    waiting: list = []  # (claim order, row, the stream it came from)

    def take(cursor, after: tuple | None = None) -> None:
        row = cursor.fetchone()
        while row is not None and after is not None and claim_order(row) <= after:
            row = cursor.fetchone()  # the rest starts after the session's first
        if row is not None:
            heapq.heappush(waiting, (claim_order(row), row, cursor))

    try:
        for cursor in cursors:
            take(cursor)
        while waiting:
            order, row, cursor = heapq.heappop(waiting)
            if control_only and not row["control"]:
                return  # control work comes first: none is left
            yield row["turn"]
            take(cursor)
            if row["rest"]:  # past a session's first: the rest of its list
                cursors.append(conn.execute(SESSION_TURNS, {
                    "session": row["session"], "status": row["rest"]}))
                take(cursors[-1], after=order)
    finally:
        for cursor in cursors:
            cursor.close()


def candidates(conn: sqlite3.Connection, now: float, work_id: str | None,
               among: str | None, control_only: bool) -> Iterator[list[int]]:
    """Where a claim looks: rowids in batches, every batch after the last in
    claim order (chapter 05). Named work comes in one batch; the walk gives one
    turn first (nearly always the one taken), then more at a time."""
    if work_id is not None or among is not None:
        named = (f"SELECT rowid FROM work WHERE id IN ({among})" if work_id is None
                 else "SELECT rowid FROM work WHERE id = :work_id")
        yield [row[0] for row in conn.execute(named, {"work_id": work_id})]
        return
    walk, size = in_claim_order(conn, now, control_only), 1
    try:
        while batch := list(islice(walk, size)):
            yield batch
            size = min(4 * size, 256)
    finally:
        walk.close()  # its cursors end before the claim writes


def first_fit(conn: sqlite3.Connection, query: str, rules: dict,
              among: str | None) -> sqlite3.Row | None:
    """The first row ``query`` (``claims.PICK``) admits, trying the candidates
    batch after batch in claim order, or None. ``rules`` holds the pick's
    parameters (``now``, ``work_id``, ``control_only``...). Chapter 05."""
    looking = candidates(conn, rules["now"], rules["work_id"], among,
                         bool(rules["control_only"]))
    with closing(looking) as found:  # the walk's reads end before the claim writes
        for batch in found:
            rules["candidates"] = json.dumps(batch)
            if (row := conn.execute(query, rules).fetchone()) is not None:
                return row
    return None
