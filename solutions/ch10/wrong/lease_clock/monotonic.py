"""WRONG ANSWER to exercise 10.3 (chapter 10): the monotonic clock.

The mistake: "wall clocks jump, so use ``time.monotonic()``". Chapter 05's
advice, applied where it does not belong: a monotonic clock counts from an
arbitrary start (this machine's boot), so its readings mean nothing to
another process, let alone another host. Written into ``work.expires``, the
lease ends some time in 1970: every other host may take the work at once.
A worker's own budget is monotonic; a lease that others read is not.
Caught by ``test_a_renewal_ends_the_lease_ttl_seconds_from_the_databases_now``.
"""


import time

from crashcourse import claims
from crashcourse.claims import fence


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
