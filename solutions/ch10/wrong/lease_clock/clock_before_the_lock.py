"""The clock read before the lock. Caught by
``test_a_renewal_that_waited_for_the_row_counts_from_when_it_lands``."""


def renew(conn, claim: Claim, ttl: float) -> float | None:
    ttl = claims.check_lease(claim.owner, ttl)
    expires = store.now(conn) + ttl  # read before the row is ours
    try:
        with fence.fenced(conn, claim, "renew"):
            conn.execute("UPDATE work SET expires = :expires WHERE id = :id",
                         {"expires": expires, "id": claim.id})
    except fence.StaleClaim:
        return None
    return expires
