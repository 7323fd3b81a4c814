"""WRONG ANSWER to exercise 05.1 (chapter 05): the refusal made by hand.

The mistake: the two claims are real, but the old holder never tries to
finish. The answer builds the ``StaleClaim`` it expects the fence to raise
and writes the refusal row with ``fence.record_refusal``, so the row, the
reason and the untouched work all look as if the database had refused. It
shows what the author believed the fence would do, not what it did: the
same code "proves" the refusal with the fence removed. Caught by
``test_the_refusal_is_the_one_the_database_gave``.
"""


def replace_under_same_label(
    conn: sqlite3.Connection, work_id: str, owner: str, ttl: float, now: float
) -> tuple[Claim, Claim, fence.StaleClaim]:
    """Claim, replace under the same owner, say the old claim was refused."""
    old = claims.claim(conn, owner, ttl=ttl, now=now, work_id=work_id)
    new = claims.claim(conn, owner, ttl=ttl, now=old.expires, work_id=work_id)
    fence.record_refusal(conn, old, "finish", "superseded")
    return old, new, fence.StaleClaim("superseded", old)
