"""Read, judge, then renew. Caught by
``test_a_cancel_between_a_read_and_the_renewal_is_never_overwritten``."""


def renew(conn, claim: Claim, ttl: float) -> float | None:
    ttl = claims.check_lease(claim.owner, ttl)
    found = conn.execute("SELECT * FROM work WHERE id = :id",
                         {"id": claim.id}).fetchone()
    switches = conn.execute("SELECT * FROM runtime_control WHERE id = 1").fetchone()
    now = store.now(conn)
    if fence.stale_reason(found, switches, claim, now) is not None:
        return None
    expires = now + ttl
    conn.execute("UPDATE work SET expires = :expires WHERE id = :id",
                 {"expires": expires, "id": claim.id})
    return expires
