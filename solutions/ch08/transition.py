"""Exercise 08.1, answered: a transition with a precondition on another row
(chapter 08).

The flour the workflow reserved comes on the supplier's van. The shop keeps
one row per delivery, with a ``state`` and a ``version``, and a history row
for every move. The van driver's handheld and the clerk at the counter both
move it, each from the row as they last saw it. ``MOVES`` is the one table
of legal moves; a van can turn back, so a delivery may be ``booked`` twice.
The clerk may also ask for a cancel without naming a version
(``request_cancel``); nobody carries that delivery on afterwards.

Everything but ``transition`` is given.
"""

from __future__ import annotations

import sqlite3

from crashcourse.store import ensure_schema, immediate, sql_list
from crashcourse.validate import check_count, check_text, clock
from crashcourse.workflow import (
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
    """Move the delivery from (expected_state, expected_version) to
    ``to_state`` along ``MOVES``: one compare-and-set, the cancel request
    read under the same write lock, and the history row, in one write
    transaction; the new version (chapter 08)."""
    for name, state in (("expected_state", expected_state), ("to_state", to_state)):
        if state not in STATES:
            raise ValueError(f"{name} must be one of {STATES}, got {state!r}")
    check_count("expected_version", expected_version)
    check_text("who", who)
    with transaction(conn):  # the write lock first: nobody moves it under us
        found = read(conn, delivery_id)
        current = {"state": found["state"], "version": found["version"]}
        if (expected_state, to_state) not in MOVES:
            raise TransitionRefused(ILLEGAL_MOVE, current)
        version = compare_and_set(conn, delivery_id, expected_state,
                                  expected_version, to_state)
        if version is None:
            raise TransitionRefused(STALE_VERSION, current)
        if stopped(conn, delivery_id, expected_state, to_state):
            raise TransitionRefused(CANCEL_REQUESTED, current)  # rolls back
        write_history(conn, delivery_id, version, expected_state, to_state, who)
    return version


def transaction(conn: sqlite3.Connection):
    """The move's one write transaction, the write lock taken at its BEGIN."""
    return immediate(conn)


def compare_and_set(conn: sqlite3.Connection, delivery_id: str,
                    expected_state: str, expected_version: int,
                    to_state: str) -> int | None:
    """The new version, or None when the row is not as the caller saw it."""
    moved = conn.execute(
        "UPDATE deliveries SET state = :to_state, version = version + 1"
        " WHERE id = :id"
        "   AND state = :expected_state"  # as the caller saw it ...
        "   AND version = :expected_version",  # ... and nobody moved it since
        {"id": delivery_id, "to_state": to_state,
         "expected_state": expected_state,
         "expected_version": expected_version}).rowcount
    return expected_version + 1 if moved == 1 else None


def stopped(conn: sqlite3.Connection, delivery_id: str, from_state: str,
            to_state: str) -> bool:
    """A forward move of a delivery with a cancel request waiting, read
    under the move's write lock: no request slips in."""
    waiting = conn.execute(
        "SELECT 1 FROM cancel_requests WHERE delivery_id = :id",
        {"id": delivery_id}).fetchone()
    return bool(waiting) and (from_state, to_state) in FORWARD


def write_history(conn: sqlite3.Connection, delivery_id: str, version: int,
                  from_state: str, to_state: str, who: str) -> None:
    """The move's history row: who made ``version``, from what to what."""
    conn.execute(
        "INSERT INTO delivery_history (delivery_id, version, from_state,"
        " to_state, who, at) VALUES (:id, :version, :from_state, :to_state,"
        " :who, :at)",
        {"id": delivery_id, "version": version, "from_state": from_state,
         "to_state": to_state, "who": who, "at": clock()})
