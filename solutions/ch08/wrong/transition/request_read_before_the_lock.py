"""WRONG ANSWER to exercise 08.1 (chapter 08): the cancel request read before
the write lock.

The mistake: the compare-and-set is right, but the cancel request is looked
up before the transaction starts. Between that read and the move's commit the
clerk's request can commit, and the delivery goes out on the van with a
request waiting for it. The version does not help: a request names no
version and moves none. Caught by
``test_the_clerk_asks_between_your_read_and_your_write``, which puts the
clerk's request exactly after the driver's look at the requests.
"""


def transition(conn: sqlite3.Connection, delivery_id: str, *, expected_state: str,
               expected_version: int, to_state: str, who: str) -> int:
    """The request read first, outside the move's transaction."""
    for name, state in (("expected_state", expected_state), ("to_state", to_state)):
        if state not in STATES:
            raise ValueError(f"{name} must be one of {STATES}, got {state!r}")
    check_count("expected_version", expected_version)
    check_text("who", who)
    waiting = conn.execute(  # outside the transaction: a snapshot, not a lock
        "SELECT 1 FROM cancel_requests WHERE delivery_id = :id",
        {"id": delivery_id}).fetchone()
    with immediate(conn):
        found = read(conn, delivery_id)
        current = {"state": found["state"], "version": found["version"]}
        if (expected_state, to_state) not in MOVES:
            raise TransitionRefused(ILLEGAL_MOVE, current)
        moved = conn.execute(
            "UPDATE deliveries SET state = :to_state, version = version + 1"
            " WHERE id = :id"
            "   AND state = :expected_state"  # as the caller saw it ...
            "   AND version = :expected_version",  # ... and nobody moved it since
            {"id": delivery_id, "to_state": to_state,
             "expected_state": expected_state,
             "expected_version": expected_version}).rowcount
        if moved != 1:
            raise TransitionRefused(STALE_VERSION, current)
        if waiting and (expected_state, to_state) in FORWARD:
            raise TransitionRefused(CANCEL_REQUESTED, current)  # rolls back
        conn.execute(
            "INSERT INTO delivery_history (delivery_id, version, from_state,"
            " to_state, who, at) VALUES (:id, :version, :from_state, :to_state,"
            " :who, :at)",
            {"id": delivery_id, "version": expected_version + 1,
             "from_state": expected_state, "to_state": to_state, "who": who,
             "at": clock()})
    return expected_version + 1
