"""Exercise 08.1: a transition with a precondition on another row (chapter 08).

The flour the workflow reserved comes on the supplier's van. The shop keeps
one row per delivery, with a ``state`` and a ``version``, and a history row
for every move. The van driver's handheld and the clerk at the counter both
move it, each from the row as they last saw it. ``MOVES`` is the one table
of legal moves; a van can turn back, so a delivery may be ``booked`` twice.

The clerk may also ask for a delivery to be cancelled (``request_cancel``)
without naming any version: a request, not a race. From then on nobody may
carry that delivery on (``FORWARD``) until it is cancelled, returned or
turned back.

Everything but ``transition`` is given. The refusal is the runtime's own
``TransitionRefused`` with the reasons ``STALE_VERSION`` and
``ILLEGAL_MOVE``, and this exercise's ``CANCEL_REQUESTED``.
"""

from __future__ import annotations

import sqlite3

from crashcourse.store import ensure_schema, immediate, sql_list
from crashcourse.validate import check_count, check_text, clock  # noqa: F401
from crashcourse.workflow import (  # noqa: F401  (refuse with these)
    ILLEGAL_MOVE,
    STALE_VERSION,
    TransitionRefused,
)

BOOKED, ON_THE_VAN, DELIVERED = "booked", "on_the_van", "delivered"
RETURNED, CANCELLED = "returned", "cancelled"
STATES = (BOOKED, ON_THE_VAN, DELIVERED, RETURNED, CANCELLED)
FINAL = (DELIVERED, RETURNED, CANCELLED)  # no move leaves these
MOVES = (
    (BOOKED, ON_THE_VAN),  # loaded
    (BOOKED, CANCELLED),  # the shop cancels before loading
    (ON_THE_VAN, BOOKED),  # the van turned back: booked again for another day
    (ON_THE_VAN, DELIVERED),  # the driver hands it over
    (ON_THE_VAN, RETURNED),  # the clerk refuses the pallet at the door
)
# The moves that carry a delivery on. A waiting cancel request stops these and
# only these: cancelling, returning and turning back are how it is honoured.
FORWARD = ((BOOKED, ON_THE_VAN), (ON_THE_VAN, DELIVERED))
CANCEL_REQUESTED = "cancel_requested"  # the third reason a move is refused

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS deliveries (
    id      TEXT PRIMARY KEY,
    state   TEXT NOT NULL CHECK (state IN {sql_list(STATES)}),
    version INTEGER NOT NULL CHECK (version >= 0)
);
CREATE TABLE IF NOT EXISTS delivery_history (
    delivery_id TEXT NOT NULL REFERENCES deliveries (id),
    version     INTEGER NOT NULL,    -- the version this move made
    from_state  TEXT,                -- NULL: booked
    to_state    TEXT NOT NULL,
    who         TEXT NOT NULL,
    at          REAL NOT NULL,
    PRIMARY KEY (delivery_id, version)  -- one author per version, ever
);
CREATE TABLE IF NOT EXISTS cancel_requests (
    delivery_id TEXT PRIMARY KEY REFERENCES deliveries (id),  -- one per delivery
    who         TEXT NOT NULL,
    at          REAL NOT NULL
)
"""


def install(conn: sqlite3.Connection) -> None:
    """Given: the deliveries, their history and the cancel requests (ch. 08)."""
    ensure_schema(conn, SCHEMA)


def book(conn: sqlite3.Connection, delivery_id: str, *, who: str) -> int:
    """Given: a new delivery, ``booked`` at version 0, and its history (ch. 08)."""
    check_text("delivery_id", delivery_id)
    check_text("who", who)
    with immediate(conn):
        conn.execute("INSERT INTO deliveries (id, state, version)"
                     f" VALUES (:id, '{BOOKED}', 0)", {"id": delivery_id})
        conn.execute(
            "INSERT INTO delivery_history (delivery_id, version, from_state,"
            f" to_state, who, at) VALUES (:id, 0, NULL, '{BOOKED}', :who, :at)",
            {"id": delivery_id, "who": who, "at": clock()})
    return 0


def read(conn: sqlite3.Connection, delivery_id: str) -> dict:
    """Given: ``{"delivery_id", "state", "version"}``; KeyError if unknown (ch. 08)."""
    row = conn.execute("SELECT id, state, version FROM deliveries WHERE id = :id",
                       {"id": delivery_id}).fetchone()
    if row is None:
        raise KeyError(f"no delivery {delivery_id!r}")
    return {"delivery_id": row["id"], "state": row["state"],
            "version": row["version"]}


def request_cancel(conn: sqlite3.Connection, delivery_id: str, *, who: str
                   ) -> bool:
    """Given: the clerk asks for the delivery to be cancelled, naming no
    version, so the request never loses a race; whoever moves the delivery
    next must honour it. Whether the request is new (asking twice is one
    request); KeyError for an unknown delivery (chapter 08)."""
    check_text("who", who)
    with immediate(conn):
        read(conn, delivery_id)
        return conn.execute(
            "INSERT INTO cancel_requests (delivery_id, who, at)"
            " VALUES (:id, :who, :at) ON CONFLICT (delivery_id) DO NOTHING",
            {"id": delivery_id, "who": who, "at": clock()}).rowcount == 1


def transition(conn: sqlite3.Connection, delivery_id: str, *, expected_state: str,
               expected_version: int, to_state: str, who: str) -> int:
    """Move the delivery from (``expected_state``, ``expected_version``), as
    the caller last saw it, to ``to_state``; return the new version.

    - One write transaction holds the compare-and-set on (state, version),
      the version's increment and the history row (delivery_id, the new
      version, from_state, to_state, who, at), so a crash leaves all of it
      or none of it, and two people who saw the same version cannot both
      move the delivery on.
    - A pair not in ``MOVES`` raises ``TransitionRefused(ILLEGAL_MOVE, ...)``
      whatever the version: reading again will not make it legal.
    - A move from anything but the row as it is now raises
      ``TransitionRefused(STALE_VERSION, ...)``.
    - A move in ``FORWARD`` while a cancel request for THIS delivery waits
      raises ``TransitionRefused(CANCEL_REQUESTED, ...)``; every other legal
      move goes on. A request committed a moment before the move must stop
      it, so it is read where nobody can add one before the move commits.
    - Judged in that order: illegal, then stale, then a cancel requested.
      The refusal's ``current`` is ``{"state", "version"}`` as found.
    - Bad input (a state not in ``STATES``, a version that is not an int of
      0 or more, a blank ``who``) raises ValueError or TypeError; an unknown
      delivery KeyError.

    Nothing is written when anything is refused or raised, and no
    transaction is left open.
    """
    raise NotImplementedError("exercise 08.1: the compare-and-set, and the request")
