"""A correct answer that writes the renewal another way under the same row
lock: inside the fence, ONE ``UPDATE`` computes the new end from the
database's clock as it applies the change and hands it back (``RETURNING``),
so no Python value of "now" travels between a read and the write."""


def renew(conn, claim: Claim, ttl: float) -> float | None:
    ttl = claims.check_lease(claim.owner, ttl)
    try:
        with fence.fenced(conn, claim, "renew"):  # the row is locked first
            expires = conn.execute(
                "UPDATE work SET expires = extract(epoch FROM clock_timestamp())"
                " + :ttl WHERE id = :id RETURNING expires",
                {"ttl": ttl, "id": claim.id}).fetchone()[0]
    except fence.StaleClaim:
        return None
    return expires
