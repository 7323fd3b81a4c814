"""The decision stamped with ``time.time()``, the ``now`` it was handed checked, then
dropped: the record of WHEN a person decided is the writer's clock, not the instant
given. Caught by ``test_a_decision_records_the_instant_it_was_given``."""

import time


def stamp(now):
    return time.time()  # whatever instant it was given
