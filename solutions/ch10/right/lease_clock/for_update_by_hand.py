"""A correct answer that takes the lock another way: no ``fence.fenced``, its
own transaction, the work row read ``SELECT ... FOR UPDATE``, the server's
clock read after that lock, the fence's own rule (``stale_reason``) applied,
and the write in the same transaction. A lapsed or replaced claim writes
nothing."""


def renew(conn, claim: Claim, ttl: float) -> float | None:
    from crashcourse import control
    from crashcourse.store import immediate

    ttl = claims.check_lease(claim.owner, ttl)
    with immediate(conn, shared=True):
        row = conn.execute(fence.HOLDER + " FOR UPDATE OF work",
                           {"id": claim.id}).fetchone()
        now = conn.execute(
            "SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()[0]
        switches = row if row is not None else control.runtime(conn)
        if fence.stale_reason(row, switches, claim, now) is not None:
            return None  # nothing written: the transaction commits empty
        conn.execute("UPDATE work SET expires = :expires WHERE id = :id",
                     {"expires": now + ttl, "id": claim.id})
    return now + ttl
