"""WRONG ANSWER to exercise 10.3 (chapter 10): a heartbeat that revives.

The mistake: the right clock (the database's), and a WHERE clause that
checks the generation, the owner and RUNNING, but not that the lease is
still running. A worker that was cut off past its lease, and comes back
before anyone claimed the work, renews it and carries on as if nothing had
happened. Meanwhile another host was entitled to claim the work, and may
already have started deciding to; a lapsed lease must stay lapsed.
Caught by ``test_a_lapsed_lease_is_never_brought_back``.
"""


from crashcourse import claims
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
