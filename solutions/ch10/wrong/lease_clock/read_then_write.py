"""WRONG ANSWER to exercise 10.3 (chapter 10): read, judge, then renew.

The mistake: the row is read and judged with the runtime's own
``fence.stale_reason`` against the database's clock, then the new end is
written by the work's id, with no transaction holding the row between the two.
An operator's cancel (or, once the lease is over, another host's claim) commits
in the gap, and the renewal writes a live lease onto work that is no longer
this holder's.
Caught by ``test_a_cancel_between_a_read_and_the_renewal_is_never_overwritten``.
"""


from crashcourse import claims, store
from crashcourse.claims import fence


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
