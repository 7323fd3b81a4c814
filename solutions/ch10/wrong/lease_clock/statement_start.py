"""WRONG ANSWER to exercise 10.3 (chapter 10): one statement, with ``now()``.

The mistake: a one-statement renewal with the full fence in its WHERE clause,
``SET expires = extract(epoch FROM now()) + :ttl``. ``now()`` is the database's
clock but fixed when the statement's transaction began: a renewal that waited
for the row's lock writes a lease that ends ``ttl`` seconds after it started
waiting, not after it landed.
Caught by ``test_a_renewal_that_waited_for_the_row_counts_from_when_it_lands``.
"""


from crashcourse import claims


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
