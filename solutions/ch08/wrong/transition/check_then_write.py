"""WRONG ANSWER to exercise 08.1 (chapter 08): check, then write.

The mistake: the row is read and compared with what the caller saw, and the
move is written afterwards in a transaction of its own, ``WHERE id = :id``
only. Called alone it is right every time: stale and illegal moves are
refused, nothing is written when they are. But nothing holds the row still
from the check to the write, so the clerk can move it in between and the
driver's write lands on top (here its history row then collides with the
clerk's version). Caught by
``test_the_clerk_moves_between_your_read_and_your_write``.
"""


def transition(conn: sqlite3.Connection, delivery_id: str, *, expected_state: str,
               expected_version: int, to_state: str, who: str) -> int:
    """Read, compare, then write."""
    for name, state in (("expected_state", expected_state), ("to_state", to_state)):
        if state not in STATES:
            raise ValueError(f"{name} must be one of {STATES}, got {state!r}")
    check_count("expected_version", expected_version)
    check_text("who", who)
    found = read(conn, delivery_id)  # the check ...
    current = {"state": found["state"], "version": found["version"]}
    if (expected_state, to_state) not in MOVES:
        raise TransitionRefused(ILLEGAL_MOVE, current)
    if current != {"state": expected_state, "version": expected_version}:
        raise TransitionRefused(STALE_VERSION, current)
    if conn.execute("SELECT 1 FROM cancel_requests WHERE delivery_id = :id",
                    {"id": delivery_id}).fetchone() and (
            expected_state, to_state) in FORWARD:
        raise TransitionRefused(CANCEL_REQUESTED, current)
    with immediate(conn):  # ... then the write, in a transaction of its own
        conn.execute(
            "UPDATE deliveries SET state = :to_state, version = version + 1"
            " WHERE id = :id",
            {"id": delivery_id, "to_state": to_state})
        conn.execute(
            "INSERT INTO delivery_history (delivery_id, version, from_state,"
            " to_state, who, at) VALUES (:id, :version, :from_state, :to_state,"
            " :who, :at)",
            {"id": delivery_id, "version": expected_version + 1,
             "from_state": expected_state, "to_state": to_state, "who": who,
             "at": clock()})
    return expected_version + 1
