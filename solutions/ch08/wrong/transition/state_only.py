"""WRONG ANSWER to exercise 08.1: the UPDATE's WHERE checks the state the
caller saw and leaves the version out. Two people racing from "on the van"
are still told apart; but a state comes back (the van turned back, booked
again at version 2), and the clerk who saw it booked at version 0 cancels a
delivery that has been on the road since. Caught by
``test_the_same_state_at_a_newer_version_is_still_stale``.
"""


def compare_and_set(conn, delivery_id, expected_state, expected_version, to_state):
    moved = conn.execute(
        "UPDATE deliveries SET state = :to_state, version = version + 1"
        " WHERE id = :id AND state = :expected_state",  # the version left out
        {"id": delivery_id, "to_state": to_state,
         "expected_state": expected_state}).rowcount
    return read(conn, delivery_id)["version"] if moved == 1 else None
