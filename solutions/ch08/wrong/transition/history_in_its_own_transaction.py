"""WRONG ANSWER to exercise 08.1 (chapter 08): the history row afterwards.

The mistake: the compare-and-set is right (state and version in the UPDATE's
WHERE, under the write lock), but it commits on its own and the history row
is written in a second transaction. Every race is won by exactly one person
and every refusal writes nothing. A process that dies between the two
commits leaves a delivery that moved with no row saying who moved it, so the
history can no longer explain the final state. Caught by
``test_a_crash_inside_the_move_leaves_all_of_it_or_none[delivery_history]``.
"""


def transition(conn: sqlite3.Connection, delivery_id: str, *, expected_state: str,
               expected_version: int, to_state: str, who: str) -> int:
    """The compare-and-set, committed; then the history row."""
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
            "   AND state = :expected_state"
            "   AND version = :expected_version",
            {"id": delivery_id, "to_state": to_state,
             "expected_state": expected_state,
             "expected_version": expected_version}).rowcount
        if moved != 1:
            raise TransitionRefused(STALE_VERSION, current)
        waiting = conn.execute(
            "SELECT 1 FROM cancel_requests WHERE delivery_id = :id",
            {"id": delivery_id}).fetchone()
        if waiting and (expected_state, to_state) in FORWARD:
            raise TransitionRefused(CANCEL_REQUESTED, current)
    with immediate(conn):  # the second commit: a kill before it loses the row
        conn.execute(
            "INSERT INTO delivery_history (delivery_id, version, from_state,"
            " to_state, who, at) VALUES (:id, :version, :from_state, :to_state,"
            " :who, :at)",
            {"id": delivery_id, "version": expected_version + 1,
             "from_state": expected_state, "to_state": to_state, "who": who,
             "at": clock()})
    return expected_version + 1
