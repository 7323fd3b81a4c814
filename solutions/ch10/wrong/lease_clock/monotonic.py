"""The monotonic clock. Caught by
``test_a_renewal_ends_the_lease_ttl_seconds_from_the_databases_now``."""

import time


def renew(conn, claim: Claim, ttl: float) -> float | None:
    ttl = claims.check_lease(claim.owner, ttl)
    try:
        with fence.fenced(conn, claim, "renew"):
            expires = time.monotonic() + ttl
            conn.execute("UPDATE work SET expires = :expires WHERE id = :id",
                         {"expires": expires, "id": claim.id})
    except fence.StaleClaim:
        return None
    return expires
