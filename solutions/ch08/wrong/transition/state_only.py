"""WRONG ANSWER to exercise 08.1 (chapter 08): compare the state only.

The mistake: the UPDATE's WHERE checks the state the caller saw and leaves
the version out (the version is still counted up, and the history row
carries the version the move made). Two people racing from "on the van" are
still told apart, because the first move changes the state. But a state can
come back: the van turned back and the delivery is booked again, at version
2. The clerk who saw it booked at version 0 cancels, and the cancel goes
through, against a delivery that has been on the road since the clerk
looked. Caught by ``test_the_same_state_at_a_newer_version_is_still_stale``.
"""


def transition(conn: sqlite3.Connection, delivery_id: str, *, expected_state: str,
               expected_version: int, to_state: str, who: str) -> int:
    """A compare-and-set on the state alone."""
    for name, state in (("expected_state", expected_state), ("to_state", to_state)):
        if state not in STATES:
            raise ValueError(f"{name} must be one of {STATES}, got {state!r}")
    check_count("expected_version", expected_version)
    check_text("who", who)
    with immediate(conn):
        found = read(conn, delivery_id)
        current = {"state": found["state"], "version": found["version"]}
        if (expected_state, to_state) not in MOVES:
            raise TransitionRefused(ILLEGAL_MOVE, current)
        moved = conn.execute(
            "UPDATE deliveries SET state = :to_state, version = version + 1"
            " WHERE id = :id"
            "   AND state = :expected_state",  # the version is left out
            {"id": delivery_id, "to_state": to_state,
             "expected_state": expected_state}).rowcount
        if moved != 1:
            raise TransitionRefused(STALE_VERSION, current)
        waiting = conn.execute(
            "SELECT 1 FROM cancel_requests WHERE delivery_id = :id",
            {"id": delivery_id}).fetchone()
        if waiting and (expected_state, to_state) in FORWARD:
            raise TransitionRefused(CANCEL_REQUESTED, current)
        version = current["version"] + 1
        conn.execute(
            "INSERT INTO delivery_history (delivery_id, version, from_state,"
            " to_state, who, at) VALUES (:id, :version, :from_state, :to_state,"
            " :who, :at)",
            {"id": delivery_id, "version": version, "from_state": expected_state,
             "to_state": to_state, "who": who, "at": clock()})
    return version
