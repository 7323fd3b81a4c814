"""The refusal made by hand. Caught by
``test_the_refusal_is_the_one_the_database_gave``."""


def replace_under_same_label(
    conn: sqlite3.Connection, work_id: str, owner: str, ttl: float, now: float
) -> tuple[Claim, Claim, fence.StaleClaim]:
    """Claim, replace under the same owner, say the old claim was refused."""
    old = claims.claim(conn, owner, ttl=ttl, now=now, work_id=work_id)
    new = claims.claim(conn, owner, ttl=ttl, now=old.expires, work_id=work_id)
    fence.record_refusal(conn, old, "finish", "superseded")
    return old, new, fence.StaleClaim("superseded", old)
