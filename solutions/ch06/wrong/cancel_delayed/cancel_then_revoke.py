"""Cancel, then revoke, apart. Caught by
``test_a_crash_inside_the_cancel_leaves_all_of_it_or_none[orders]``."""


def cancel_here(conn: sqlite3.Connection, work_id: str) -> tuple[int, int]:
    """The cancel committed, then the orders that never left."""
    generation = fence.cancel(conn, work_id)
    with immediate(conn):
        revoked = orders.revoke_unsent(conn, work_id)
    return generation, revoked
