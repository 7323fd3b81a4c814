"""WRONG ANSWER to exercise 08.1 (chapter 08): any request stops every delivery.

The mistake: the lookup asks whether any cancel request exists, not one for
this delivery. With one delivery in the shop it behaves; with two, the
clerk's request for the rye stops the flour too. Caught by
``test_a_request_stops_only_its_own_delivery`` and by the generated
histories of ``test_any_history_of_moves_and_requests_ends_as_the_rules_say``.
"""


def transition(conn: sqlite3.Connection, delivery_id: str, *, expected_state: str,
               expected_version: int, to_state: str, who: str) -> int:
    """A request for any delivery stops this one."""
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
            "SELECT 1 FROM cancel_requests").fetchone()  # any delivery's
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
