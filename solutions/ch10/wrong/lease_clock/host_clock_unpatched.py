"""WRONG ANSWER to exercise 10.3 (chapter 10): the worker's clock, read so
that patching ``time.time`` does not see it.

The mistake: fenced, but the new end is ``time.time_ns() / 1e9 + ttl``: the
worker host's clock, through a function a grader that patches ``time.time``
never touches. On a host an hour fast the lease ends an hour late; an hour
slow, it is born already over. Only a database whose clock really differs from
the worker's shows it.
Caught by ``test_a_workers_clock_an_hour_off_changes_nothing``.
"""


import time

from crashcourse import claims
from crashcourse.claims import fence


def renew(conn, claim: Claim, ttl: float) -> float | None:
    ttl = claims.check_lease(claim.owner, ttl)
    try:
        with fence.fenced(conn, claim, "renew"):
            expires = time.time_ns() / 1e9 + ttl
            conn.execute("UPDATE work SET expires = :expires WHERE id = :id",
                         {"expires": expires, "id": claim.id})
    except fence.StaleClaim:
        return None
    return expires
