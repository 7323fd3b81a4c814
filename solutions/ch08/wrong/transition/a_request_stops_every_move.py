"""While a cancel request waits, every move is refused, the ones that honour it too
(cancel, return, turn back): the request freezes what it asked to stop. Caught by
``test_the_moves_that_honour_a_request_go_on``."""


def stopped(conn, delivery_id, from_state, to_state):
    return conn.execute("SELECT 1 FROM cancel_requests WHERE delivery_id = :id",
                        {"id": delivery_id}).fetchone() is not None  # every move
