"""A correct answer that takes the write lock another way: a plain (deferred)
``BEGIN`` whose first statement is a write to the claim's work row (it
changes nothing, but SQLite gives the write lock to it), then the fence's
own check, the sum and the insert, the lease checked again before
``COMMIT``. Every read comes after the lock, as under ``BEGIN IMMEDIATE``."""

from contextlib import contextmanager


@contextmanager
def guarded(conn: sqlite3.Connection, claim: Claim):
    conn.execute("BEGIN")  # deferred: the UPDATE below takes the write lock
    try:
        conn.execute("UPDATE work SET status = status WHERE id = :id",
                     {"id": claim.id})
        read, _ = fence.assert_current(conn, claim)
        yield read
        fence.lease_held_at_commit(conn, claim, read["expires"])
    except fence.StaleClaim as refused:
        conn.execute("ROLLBACK")
        fence.record_refusal(conn, claim, "reserve", refused.reason)
        raise
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
