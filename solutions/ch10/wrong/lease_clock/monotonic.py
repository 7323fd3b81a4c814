"""The monotonic clock. Caught by
``test_a_renewal_ends_the_lease_ttl_seconds_from_the_databases_now``."""

import time


def lease_end(conn, ttl: float) -> float:
    return time.monotonic() + ttl
