"""Exercise 10.3: choose the clock for a lease (chapter 10). Reference answer.

The lease is an instant that other hosts compare with THEIR "now", so it
must be written by the clock they all read: the database's (``store.now``,
read after the row is locked). The renewal is a fenced write
(``fence.fenced``): the claim must be the live one, lease included, at the
moment of the renewal, so a lapsed lease is refused, never extended.
"""

from __future__ import annotations

from crashcourse import claims, store
from crashcourse.claims import Claim, fence


def lease_end(conn, ttl: float) -> float:
    """The instant ``ttl`` seconds from now, by the clock every host reads."""
    return store.now(conn) + ttl


def renew(conn, claim: Claim, ttl: float) -> float | None:
    """Extend ``claim``'s lease to ``ttl`` seconds from the database's now, if
    ``claim`` is still the live claim; its new end, or None."""
    ttl = claims.check_lease(claim.owner, ttl)
    try:
        with fence.fenced(conn, claim, "renew"):
            expires = lease_end(conn, ttl)  # read once the row is locked
            conn.execute("UPDATE work SET expires = :expires WHERE id = :id",
                         {"expires": expires, "id": claim.id})
    except fence.StaleClaim:
        return None
    return expires
