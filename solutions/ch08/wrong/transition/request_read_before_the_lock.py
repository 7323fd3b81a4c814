"""The compare-and-set right, but the cancel request looked up before the transaction
starts: the clerk's request can commit between that read and the move's commit, and the
delivery goes out with a request waiting. Caught by
``test_the_clerk_asks_between_your_read_and_your_write``."""


def transition(conn, delivery_id, *, expected_state, expected_version, to_state,
               who, _move=transition, _stopped=stopped):  # noqa: F821
    # outside the transaction: a snapshot, not a lock
    stopped.early = _stopped(conn, delivery_id, expected_state, to_state)
    return _move(conn, delivery_id, expected_state=expected_state,
                 expected_version=expected_version, to_state=to_state, who=who)


def stopped(conn, delivery_id, from_state, to_state):
    return stopped.early  # as read before the write lock
