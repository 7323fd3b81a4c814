"""Exercise 06.1 answer: cancel while a result is delayed."""

from __future__ import annotations

import sqlite3

from crashcourse import fence, orders
from crashcourse.claims import clock
from crashcourse.store import immediate


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Cancel and revoke in one transaction, then only ask about what went out."""
    with immediate(conn):
        generation = fence.cancel_locked(conn, work_id, clock(None))
        revoked = orders.revoke_unsent(conn, work_id)
    uncertain = conn.execute(
        "SELECT op_id FROM orders WHERE work_id = :id"
        " AND status IN ('SENDING', 'UNKNOWN') ORDER BY rowid", {"id": work_id},
    ).fetchall()
    looked_up = {row["op_id"]: orders.lookup(conn, row["op_id"], supplier_url)
                 for row in uncertain}
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
