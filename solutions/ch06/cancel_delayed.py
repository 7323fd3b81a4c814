"""Exercise 06.1 answer: cancel while a result is delayed."""

from __future__ import annotations

import sqlite3

from crashcourse.claims import fence, orders
from crashcourse.store import immediate, sql_list
from crashcourse.validate import clock


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Cancel and revoke in one transaction, then only ask about what went out."""
    with immediate(conn):
        generation = fence.cancel_locked(conn, work_id, clock())
        revoked = orders.revoke_unsent(conn, work_id)
    uncertain = conn.execute(
        "SELECT operation_key FROM orders"
        " WHERE work_id = :work_id"
        # a request may have reached the supplier: ask, never resend
        f" AND status IN {sql_list(orders.UNCERTAIN)}"
        " ORDER BY rowid",
        {"work_id": work_id},
    ).fetchall()
    looked_up = {
        row["operation_key"]: orders.lookup(conn, row["operation_key"], supplier_url)
        for row in uncertain
    }
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
