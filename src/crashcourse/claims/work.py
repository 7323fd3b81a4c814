"""The work table and the claim a holder presents: what the claim on SQLite
and the claim on a server share (chapter 05).

A row of ``work`` is an *assignment*: what to do (origin, session, prompt,
subject, role), fixed when it is queued. The *holder* fields (status, owner,
generation, expires, available_after) say who may act on it now. Each grant
is a row of ``claims``. The statuses, the two tables, the ordinary pass's
rule and ``Claim`` are
spelled once, here, below both claims: SQLite's in ``crashcourse.claims``
(one writer decides) and a server's in ``crashcourse.claims.postgres`` (many
claimers at once, chapter 10). Callers read them through ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass

from crashcourse.effects import FencingToken
from crashcourse.store import sql_list

# An open turn is queued or held; then it ends one of three ways.
READY, RUNNING = "READY", "RUNNING"
DONE, BLOCKED, CANCELLED = "DONE", "BLOCKED", "CANCELLED"
STATUSES = (READY, RUNNING, DONE, BLOCKED, CANCELLED)
OPEN = (READY, RUNNING)  # work a claim may still be granted on
# A status goes into a query's text from these constants; values are parameters.
ASSIGNMENT = ("session", "prompt", "subject", "role")  # fixed once queued
MAX_TTL = 3600.0  # the longest lease, in seconds

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS work (
    id              TEXT PRIMARY KEY,
    origin          TEXT NOT NULL UNIQUE,  -- where the request came from: dedupes
    session         TEXT NOT NULL,
    prompt          TEXT NOT NULL,
    subject         TEXT NOT NULL,
    role            TEXT NOT NULL,
    control         INTEGER NOT NULL DEFAULT 0 CHECK (control IN (0, 1)),
    created         DOUBLE PRECISION NOT NULL,
    status          TEXT NOT NULL DEFAULT '{READY}'
                    CHECK (status IN {sql_list(STATUSES)}),
    owner           TEXT,
    generation      INTEGER NOT NULL DEFAULT 0,
    expires         DOUBLE PRECISION,
    available_after DOUBLE PRECISION NOT NULL DEFAULT 0,
    finished        DOUBLE PRECISION,
    outcome         TEXT
);
-- one session's turns by status, in claim order: the session rule looks up its
-- RUNNING turns, and the walk (crashcourse.claims.turns) its READY ones
CREATE INDEX IF NOT EXISTS work_in_session
    ON work (session, status, control DESC, created);
-- files made before crashcourse.claims.turns: the claim query no longer walks work
DROP INDEX IF EXISTS work_open_in_order;
DROP INDEX IF EXISTS work_live_in_session;
CREATE TABLE IF NOT EXISTS claims (
    work_id    TEXT NOT NULL REFERENCES work (id),
    generation INTEGER NOT NULL,
    owner      TEXT NOT NULL,
    claimed_at DOUBLE PRECISION NOT NULL,
    expires    DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (work_id, generation)
)
"""

# The ordinary pass's rule, a fragment of a pick (``claims.claim``'s
# ``eligible``), read of the turn it looks at, ``item``: queued work, or
# held work whose lease has run out. Chapter 06's recovery pass has its own
# (``orders.RECOVERY``).
ORDINARY = f"""-- eligible: queued, or held under a lease that has run out
    AND item.status IN {sql_list(OPEN)}
    AND (item.status = '{READY}' OR item.expires <= :now)"""


@dataclass(frozen=True)
class Claim:
    """What a holder presents at every fenced write (chapter 05)."""

    id: str
    session: str
    prompt: str
    subject: str
    role: str
    owner: str
    generation: int
    expires: float
    epoch: str

    @property
    def token(self) -> FencingToken:
        """The fencing token its writes carry to a service: (work id,
        generation). Introduced in chapter 06."""
        return FencingToken(self.id, self.generation)
