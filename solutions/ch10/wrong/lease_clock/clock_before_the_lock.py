"""WRONG ANSWER to exercise 10.3 (chapter 10): the clock read before the lock.

The mistake: the database's clock, the fenced write, but ``store.now`` is read
BEFORE ``fence.fenced`` locks the row. If the row is busy (another writer holds
it), the renewal waits, and the lease it writes is ``ttl`` seconds from the
moment it started waiting: shorter than promised by the whole wait, and
possibly already over when it lands.
Caught by ``test_a_renewal_that_waited_for_the_row_counts_from_when_it_lands``.
"""


from crashcourse import claims, store
from crashcourse.claims import fence


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
