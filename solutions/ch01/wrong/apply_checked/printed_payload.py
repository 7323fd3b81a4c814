"""Payloads stored and compared as ``str(payload)``, Python's printed form: the same
items in another order print differently, and a genuine replay is refused as a conflict.
Caught by ``test_a_replay_in_a_new_connection_returns_the_recorded_result``."""


def spelled(payload):
    return str(payload)  # as Python prints it
