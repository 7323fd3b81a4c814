"""A correct answer whose read of the delivery is a CTE (``WITH ... SELECT``)
inside the move's write transaction, in place of the given ``read``; the
same row, under the same lock, and KeyError for an unknown delivery."""


def transition(conn: sqlite3.Connection, delivery_id: str, *, expected_state: str,
               expected_version: int, to_state: str, who: str) -> int:
    for name, state in (("expected_state", expected_state), ("to_state", to_state)):
        if state not in STATES:
            raise ValueError(f"{name} must be one of {STATES}, got {state!r}")
    check_count("expected_version", expected_version)
    check_text("who", who)
    with transaction(conn):
        row = conn.execute(
            "WITH this AS (SELECT state, version FROM deliveries WHERE id = :id)"
            " SELECT state, version FROM this", {"id": delivery_id}).fetchone()
        if row is None:
            raise KeyError(f"no delivery {delivery_id!r}")
        current = {"state": row["state"], "version": row["version"]}
        if (expected_state, to_state) not in MOVES:
            raise TransitionRefused(ILLEGAL_MOVE, current)
        version = compare_and_set(conn, delivery_id, expected_state,
                                  expected_version, to_state)
        if version is None:
            raise TransitionRefused(STALE_VERSION, current)
        if stopped(conn, delivery_id, expected_state, to_state):
            raise TransitionRefused(CANCEL_REQUESTED, current)
        write_history(conn, delivery_id, version, expected_state, to_state, who)
    return version
