"""One statement, with ``now()``. Caught by
``test_a_renewal_that_waited_for_the_row_counts_from_when_it_lands``."""


def renew(conn, claim: Claim, ttl: float) -> float | None:
    ttl = claims.check_lease(claim.owner, ttl)
    found = conn.execute("""
        UPDATE work SET expires = extract(epoch FROM now()) + :ttl
        WHERE id = :id AND generation = :generation AND owner = :owner
          AND status = 'RUNNING'
          AND expires > extract(epoch FROM clock_timestamp())
        RETURNING expires""", {"ttl": ttl, "id": claim.id,
                                 "generation": claim.generation,
                                 "owner": claim.owner}).fetchone()
    return None if found is None else found[0]
