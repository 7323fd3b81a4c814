"""Durable assignments, claims, leases and generations (chapter 05).

A row of ``work`` is an *assignment*: what to do (origin, session, prompt,
subject, role), fixed when it is queued; triggers refuse any change to those
fields, an INSERT over the row (``INSERT OR REPLACE``) and its DELETE. The
*holder* fields (status, owner, generation, expires, available_after) say who
may act on it now. The table, the statuses and ``Claim`` are spelled in
``crashcourse.claims.work``; this module is where callers take them from.

``claim`` grants a claim in one ``BEGIN IMMEDIATE`` transaction, records it as
a row of ``claims`` and bumps the generation every time, also when the owner
label is reused. Which work a pass may take is a SQL fragment the caller
passes in: ``ORDINARY`` here; chapter 06's recovery rule lives in
``crashcourse.claims.orders``, beside the table it reads. The fence that later writes
must pass, ``assert_current``, lives in ``crashcourse.claims.fence`` (chapter 06).
Leases are wall-clock, read from the store's clock (``store.now``), because
another process must read them after a restart; a local budget uses
``time.monotonic``. The pause flag every claim reads (``control.set_paused``)
belongs to ``crashcourse.control``. Where a claim looks, and in what order,
is ``crashcourse.claims.turns``: a walk that never reads the turns waiting behind a
held session, so a claim costs the same with 8,000 of them as with none.

``install`` and ``claim`` hand the work to the store's own database, in one
place (``BACKENDS``): SQLite's claim is here (``install_sqlite``,
``claim_sqlite``, ``PICK``); a PostgreSQL store's (chapter 10), where many
claimers run at once, is ``crashcourse.claims.postgres``, with SQL of its own
that keeps the same rules.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections import namedtuple

from crashcourse import control, store
from crashcourse.boundary import boundary
from crashcourse.claims import postgres as claims_postgres
from crashcourse.claims import turns
from crashcourse.claims.work import (  # noqa: F401  (claims.DONE, claims.Claim...)
    ASSIGNMENT,
    BLOCKED,
    CANCELLED,
    DONE,
    MAX_TTL,
    OPEN,
    ORDINARY,
    READY,
    RUNNING,
    SCHEMA,
    STATUSES,
    Claim,
)
from crashcourse.store import ensure_schema, immediate
from crashcourse.store.dialect import POSTGRES, SQLITE
from crashcourse.validate import check_flag, check_text

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["FIXED_ASSIGNMENT", "AssignmentConflict", "install", "install_sqlite",
    "work_id_for", "check_lease", "enqueue", "PICK", "claim", "CHOSEN",
    "claim_sqlite", "GRANT", "GRANTED", "grant_locked", "work_row", "Backend",
    "BACKENDS", "RUNS_ON", "Claim", "DONE", "RUNNING", "fence", "orders",
    "ASSIGNMENT", "BLOCKED", "CANCELLED", "MAX_TTL", "OPEN", "ORDINARY", "READY",
    "SCHEMA", "STATUSES"]

# An assignment is never changed under its id: no UPDATE of its fields, no
# INSERT over it (INSERT OR REPLACE deletes the old row WITHOUT firing an
# UPDATE or a DELETE trigger, so the INSERT itself is refused) and no DELETE.
# Each body holds a ';', so each is created on its own (ensure_schema splits
# on ';'). SQLite's triggers; a server's are in claims_postgres.
FIXED_ASSIGNMENT = ("""
CREATE TRIGGER IF NOT EXISTS work_assignment_is_fixed
BEFORE UPDATE OF id, origin, session, prompt, subject, role ON work
BEGIN SELECT RAISE(ABORT, 'assignment fields are immutable'); END
""", """
CREATE TRIGGER IF NOT EXISTS work_assignment_is_not_replaced
BEFORE INSERT ON work
WHEN EXISTS (SELECT 1 FROM work WHERE id = NEW.id OR origin = NEW.origin)
BEGIN SELECT RAISE(ABORT, 'assignment fields are immutable: queued already'); END
""", """
CREATE TRIGGER IF NOT EXISTS work_assignment_is_kept
BEFORE DELETE ON work
BEGIN SELECT RAISE(ABORT, 'assignment fields are immutable: never deleted'); END
""")


class AssignmentConflict(ValueError):
    """The origin is already queued with other content (chapter 05)."""


def install(conn: sqlite3.Connection) -> None:
    """Create the work and claims tables, on the store's own database
    (``BACKENDS``): SQLite's here, a server's in ``claims.postgres`` (chapter
    10). Introduced in chapter 05."""
    store.check_backend(conn, RUNS_ON, __name__)
    _backend(conn).install(conn)


def install_sqlite(conn: sqlite3.Connection) -> None:
    """``install`` on SQLite: the work and claims tables and the walk's
    ``sessions`` (chapter 05), and the pause flag's row every claim reads
    (``control.install``, since chapter 09)."""
    control.install(conn)
    ensure_schema(conn, SCHEMA)
    with immediate(conn):
        for trigger in FIXED_ASSIGNMENT:
            conn.execute(trigger)
    turns.install(conn)  # the walk's sessions table, triggers and indexes


def work_id_for(origin: str) -> str:
    """A stable id for an origin: the same request always names the same work.

    Introduced in chapter 05."""
    digest = hashlib.sha256(check_text("origin", origin).encode()).hexdigest()
    return "work-" + digest[:12]


def check_lease(owner: object, ttl: object) -> float:
    """A non-empty owner and a finite lease, 0 < ttl <= 3600 s (chapter 05)."""
    check_text("owner", owner)
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise TypeError(f"ttl must be a number of seconds, got {ttl!r}")
    if not math.isfinite(ttl) or not 0 < ttl <= MAX_TTL:
        raise ValueError(f"ttl must be finite and in (0, {MAX_TTL:.0f}], got {ttl!r}")
    return float(ttl)


def enqueue(
    conn: sqlite3.Connection, origin: str, session: str, prompt: str,
    *, subject: str = "", role: str = "shop", control: bool = False,
) -> str:
    """Queue an assignment once per origin; its id (chapter 05)."""
    fields = {"origin": check_text("origin", origin),
              "session": check_text("session", session),
              "prompt": check_text("prompt", prompt),
              "subject": check_text("subject", subject, empty_ok=True),
              "role": check_text("role", role)}
    fields |= {"id": work_id_for(origin),  # control as 0 or 1: a server's INTEGER
               "control": int(check_flag("control", control))}
    with immediate(conn):
        existing = conn.execute(
            "SELECT * FROM work WHERE origin = :origin", fields
        ).fetchone()
        if existing is None:
            conn.execute(
                "INSERT INTO work (id, origin, session, prompt, subject, role,"
                " control, created) VALUES (:id, :origin, :session, :prompt,"
                " :subject, :role, :control, :created)",
                fields | {"created": store.now(conn)},  # one clock for all hosts
            )
        elif any(existing[name] != fields[name] for name in (*ASSIGNMENT, "control")):
            raise AssignmentConflict(f"origin {origin!r} is queued with other content")
    return fields["id"]


# Read the predicates by responsibility; each block is one rule. {eligible} is
# the pass's own rule (ORDINARY, or orders.RECOVERY), comment included.
PICK = f"""
SELECT item.* FROM work AS item
WHERE
    -- where this claim looks: the turns the walk found (crashcourse.claims.turns)
        item.rowid IN (SELECT value FROM json_each(:candidates))
    -- which work this pass may look at
    AND item.role = :role
    AND (:work_id IS NULL OR item.id = :work_id)
    AND (:control_only = 0 OR item.control = 1)
    -- its retry delay has passed
    AND item.available_after <= :now
    {{eligible}}
    -- one live holder per session: a turn waits for the one before it
    AND NOT EXISTS (
        SELECT 1 FROM work AS other
        WHERE other.session = item.session
          AND other.id != item.id
          AND other.status = '{RUNNING}'
          AND other.expires > :now)
-- operator control work first, then the oldest
ORDER BY item.control DESC, item.created ASC, item.rowid ASC
LIMIT 1
"""


def claim(
    conn: sqlite3.Connection, owner: str, *, ttl: float, now: float | None = None,
    role: str = "shop", work_id: str | None = None, control_only: bool = False,
    eligible: str = ORDINARY, among: str | None = None,
) -> Claim | None:
    """Take the next eligible assignment for ``ttl`` seconds, or None (chapter 05).

    ``eligible`` is the pass's eligibility rule, a SQL fragment written in code
    (never built from input) in the shape of ``ORDINARY``. A pass looks at the
    turns ``turns.in_claim_order`` walks to (queued work, lapsed leases), or at
    ``work_id`` alone, or at the work ids ``among`` selects (SQL written in
    code, as ``orders.claim_recovery`` looks at work that is not queued).
    The claim itself is the store's own database's (``BACKENDS``):
    ``claim_sqlite`` below, or a server's (``claims.postgres``, chapter 10)."""
    ttl = check_lease(owner, ttl)
    check_text("role", role)
    check_text("work_id", work_id, none_ok=True)
    check_flag("control_only", control_only)
    return _backend(conn).claim(conn, owner, ttl, now, role, work_id,
                                control_only, eligible, among)


CHOSEN = "chosen"  # boundary: a claim's row is picked, its grant not yet written


def claim_sqlite(conn: sqlite3.Connection, owner: str, ttl: float,
                 now: float | None, role: str, work_id: str | None,
                 control_only: bool, eligible: str, among: str | None
                 ) -> Claim | None:
    """``claim`` on SQLite, its arguments checked there: one writer at a
    time decides, so the rules hold by taking turns (chapter 05)."""
    with immediate(conn):
        now = store.now(conn, now)  # under the write lock: claims never interleave
        switches = control.runtime(conn)
        if switches["paused"]:  # the in-band pause flag (control, chapter 09)
            return None
        rules = {"role": role, "work_id": work_id, "control_only": int(control_only),
                 "now": now}
        # the first candidate, in claim order, that every rule admits
        row = turns.first_fit(conn, PICK.format(eligible=eligible), rules, among)
        if row is None:
            return None
        boundary(CHOSEN)  # chosen, not granted: only the lock's holder is here
        return grant_locked(conn, row, owner, ttl, now, switches["epoch"])


# The grant: the work row running under its next generation, and that
# generation's own claims row. The UPDATE reads the generation it raises, so
# a grant never writes one read before the lock (the read-first mutant
# chooses early, and still takes the next generation).
GRANT = f"""
UPDATE work SET status = '{RUNNING}', owner = :owner,
    generation = generation + 1, expires = :expires
WHERE id = :work_id
RETURNING generation"""
GRANTED = """
INSERT INTO claims (work_id, generation, owner, claimed_at, expires)
VALUES (:work_id, :generation, :owner, :claimed_at, :expires)"""


def grant_locked(conn: sqlite3.Connection, row, owner: str, ttl: float,
                 now: float, epoch: str) -> Claim:
    """Inside the store's write lock: the chosen work ``row`` is ``owner``'s
    for ``ttl`` s from ``now``, under the next generation; its ``Claim``,
    stamped with the authority ``epoch`` (chapter 05). SQLite's claim, and
    the read-first mutant, grant with it; a server's claim is one statement
    of its own (``claims.postgres.GRANT``)."""
    granted = {"work_id": row["id"], "owner": owner, "claimed_at": now,
               "expires": now + ttl}
    granted["generation"] = conn.execute(GRANT, granted).fetchone()[0]
    conn.execute(GRANTED, granted)
    return Claim(row["id"], row["session"], row["prompt"], row["subject"],
                 row["role"], owner, granted["generation"], granted["expires"],
                 epoch)


def work_row(conn: sqlite3.Connection, work_id: str) -> dict:
    """The assignment and its holder fields as a plain dict (chapter 05)."""
    check_text("work id", work_id)
    row = conn.execute("SELECT * FROM work WHERE id = :id", {"id": work_id}).fetchone()
    if row is None:
        raise KeyError(f"no work {work_id!r}")
    return dict(row)


# Each database's own claim, with SQL of its own: SQLite's above, where one
# writer decides, and a server's, where many claimers decide at once (chapter
# 10). The one place the two part; ``install`` and ``claim`` ask it.
Backend = namedtuple("Backend", "install claim")
BACKENDS = {SQLITE: Backend(install_sqlite, claim_sqlite),
            POSTGRES: Backend(claims_postgres.install, claims_postgres.claim)}


RUNS_ON = tuple(BACKENDS)  # the databases install() accepts (store.check_backend)


def _backend(conn) -> Backend:
    return BACKENDS[store.dialect(conn)]
