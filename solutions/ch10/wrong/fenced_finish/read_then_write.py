"""Read, judge, then write. Caught by
``test_a_cancel_between_a_read_and_the_write_is_never_overwritten`` and
``test_it_is_one_update_and_nothing_else``."""

from crashcourse.claims import fence


def finish(conn, claim: Claim, outcome: str) -> bool:
    found = conn.execute(f"SELECT *, {SERVER_NOW} AS now FROM work WHERE id = :id",
                         {"id": claim.id}).fetchone()
    switches = conn.execute("SELECT * FROM runtime_control WHERE id = 1").fetchone()
    if fence.stale_reason(found, switches, claim, found["now"]) is not None:
        return False
    conn.execute(f"UPDATE work SET status = '{DONE}', outcome = :outcome,"
                 f" expires = NULL, finished = {SERVER_NOW} WHERE id = :id",
                 {"outcome": outcome, "id": claim.id})
    return True
