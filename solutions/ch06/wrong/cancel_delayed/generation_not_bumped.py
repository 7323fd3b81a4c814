"""The generation reported, not written. Caught by
``test_the_cancel_is_durable_here_and_at_the_supplier``."""

from crashcourse import claims


def cancel_here(conn: sqlite3.Connection, work_id: str) -> tuple[int, int]:
    """CANCELLED by hand; the next generation reported, never written."""
    with immediate(conn):
        generation = claims.work_row(conn, work_id)["generation"] + 1
        conn.execute("UPDATE work SET status = 'CANCELLED', owner = 'operator',"
                     " expires = NULL WHERE id = :id", {"id": work_id})
        revoked = orders.revoke_unsent(conn, work_id)
    return generation, revoked
