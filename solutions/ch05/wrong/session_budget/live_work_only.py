"""Only RUNNING work's reservations summed, as if a reservation belonged to its claim.
Caught by ``test_a_finished_order_still_holds_its_reservation``."""


def reserved_total(conn, claim):
    return conn.execute(
        "SELECT coalesce(sum(r.amount_cents), 0) FROM reservations AS r"
        " JOIN work AS w ON w.id = r.work_id WHERE w.status = 'RUNNING'"
    ).fetchone()[0]
