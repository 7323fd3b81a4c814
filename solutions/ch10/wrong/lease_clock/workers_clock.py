"""WRONG ANSWER to exercise 10.3 (chapter 10): the worker's clock.

The mistake: the renewal is fenced, but the new end is ``time.time() +
ttl``, the clock of the host the worker runs on. On a host an hour fast the
lease now ends an hour late, and no other host may take the work for that
hour even after the worker dies; on a host an hour slow the lease is born
already over, and the next claimer takes the work from a healthy worker.
Every host compares the lease with the database's clock: write it by that.
Caught by ``test_a_workers_clock_an_hour_off_changes_nothing``.
"""


import time

from crashcourse import claims
from crashcourse.claims import fence


def renew(conn, claim: Claim, ttl: float) -> float | None:
    ttl = claims.check_lease(claim.owner, ttl)
    try:
        with fence.fenced(conn, claim, "renew"):
            expires = time.time() + ttl
            conn.execute("UPDATE work SET expires = :expires WHERE id = :id",
                         {"expires": expires, "id": claim.id})
    except fence.StaleClaim:
        return None
    return expires
