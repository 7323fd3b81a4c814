"""The compare-and-set right and committed on its own, the history row in a second
transaction. Caught by ``test_a_crash_inside_the_move_leaves_all_of_it_or_none``."""


def transition(conn, delivery_id, *, expected_state, expected_version, to_state,
               who, _move=transition, _history=write_history):  # noqa: F821
    version = _move(conn, delivery_id, expected_state=expected_state,
                    expected_version=expected_version, to_state=to_state, who=who)
    with transaction(conn):  # the second commit: a kill before it loses the row
        _history(conn, delivery_id, version, expected_state, to_state, who)
    return version


def write_history(conn, delivery_id, version, from_state, to_state, who):
    pass  # written after the move's commit, above
