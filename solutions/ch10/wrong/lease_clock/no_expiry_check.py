"""A heartbeat that revives. Caught by ``test_a_lapsed_lease_is_never_brought_back``."""

from crashcourse.claims import RUNNING, Claim


def renew(conn, claim: Claim, ttl: float) -> float | None:
    ttl = claims.check_lease(claim.owner, ttl)
    found = conn.execute(f"""
        UPDATE work SET expires = extract(epoch FROM clock_timestamp()) + :ttl
        WHERE id = :id
          AND generation = :generation
          AND owner = :owner
          AND status = '{RUNNING}'
        RETURNING expires""", {"ttl": ttl, "id": claim.id,
                                 "generation": claim.generation,
                                 "owner": claim.owner}).fetchone()
    return None if found is None else found[0]
