"""The lookup asks whether any cancel request exists, not one for this delivery: the
clerk's request for the rye stops the flour too. Caught by
``test_a_request_stops_only_its_own_delivery`` and
``test_any_history_of_moves_and_requests_ends_as_the_rules_say``."""


def stopped(conn, delivery_id, from_state, to_state):
    waiting = conn.execute("SELECT 1 FROM cancel_requests").fetchone()  # any's
    return bool(waiting) and (from_state, to_state) in FORWARD
