"""A correct answer that reads another of the server's clocks:
``statement_timestamp()``, in a statement of its own run AFTER the row is
locked. It is fixed when its statement starts, and that statement starts
once the lock is ours, so a wait for the row counts as it must. (Read in the
statement that waits for the lock, or as ``now()``, the transaction's start,
it would be early.)"""


def lease_end(conn, ttl: float) -> float:
    now = conn.execute(
        "SELECT extract(epoch FROM statement_timestamp())::float8").fetchone()[0]
    return now + ttl
