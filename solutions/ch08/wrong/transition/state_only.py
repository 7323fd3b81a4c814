"""The UPDATE's WHERE checks the state the caller saw and leaves the version out. Caught
by ``test_the_same_state_at_a_newer_version_is_still_stale``."""


def compare_and_set(conn, delivery_id, expected_state, expected_version, to_state):
    moved = conn.execute(
        "UPDATE deliveries SET state = :to_state, version = version + 1"
        " WHERE id = :id AND state = :expected_state",  # the version left out
        {"id": delivery_id, "to_state": to_state,
         "expected_state": expected_state}).rowcount
    return read(conn, delivery_id)["version"] if moved == 1 else None
