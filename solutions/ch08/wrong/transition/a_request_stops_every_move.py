"""WRONG ANSWER to exercise 08.1 (chapter 08): a request stops every move.

The mistake: while a cancel request waits, every move is refused, the ones
that honour it too. The delivery booked for cancelling cannot be cancelled,
and the pallet on the van cannot be returned or turned back: the request
freezes what it asked to stop. Caught by
``test_the_moves_that_honour_a_request_go_on``.
"""


def transition(conn: sqlite3.Connection, delivery_id: str, *, expected_state: str,
               expected_version: int, to_state: str, who: str) -> int:
    """Every move stops while a request waits."""
    for name, state in (("expected_state", expected_state), ("to_state", to_state)):
        if state not in STATES:
            raise ValueError(f"{name} must be one of {STATES}, got {state!r}")
    check_count("expected_version", expected_version)
    check_text("who", who)
    with immediate(conn):  # the write lock first: nobody moves it under us
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
        waiting = conn.execute(  # under the same write lock: no request slips in
            "SELECT 1 FROM cancel_requests WHERE delivery_id = :id",
            {"id": delivery_id}).fetchone()
        if waiting:  # every move, the ones that honour the request too
            raise TransitionRefused(CANCEL_REQUESTED, current)  # rolls back
        conn.execute(
            "INSERT INTO delivery_history (delivery_id, version, from_state,"
            " to_state, who, at) VALUES (:id, :version, :from_state, :to_state,"
            " :who, :at)",
            {"id": delivery_id, "version": expected_version + 1,
             "from_state": expected_state, "to_state": to_state, "who": who,
             "at": clock()})
    return expected_version + 1
