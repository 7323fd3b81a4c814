"""The row read and compared first, the move written afterwards in a transaction of its
own, ``WHERE id = :id`` only. Caught by
``test_the_clerk_moves_between_your_read_and_your_write``."""


def transition(conn, delivery_id, *, expected_state, expected_version, to_state,
               who):
    found = read(conn, delivery_id)  # the check ...
    current = {"state": found["state"], "version": found["version"]}
    if (expected_state, to_state) not in MOVES:
        raise TransitionRefused(ILLEGAL_MOVE, current)
    if current != {"state": expected_state, "version": expected_version}:
        raise TransitionRefused(STALE_VERSION, current)
    if stopped(conn, delivery_id, expected_state, to_state):
        raise TransitionRefused(CANCEL_REQUESTED, current)
    with transaction(conn):  # ... then the write, in a transaction of its own
        conn.execute("UPDATE deliveries SET state = :to_state,"
                     " version = version + 1 WHERE id = :id",
                     {"id": delivery_id, "to_state": to_state})
        write_history(conn, delivery_id, expected_version + 1, expected_state,
                      to_state, who)
    return expected_version + 1
