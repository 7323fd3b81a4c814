"""Exercise 06.1 answer: cancel while a result is delayed."""

from __future__ import annotations

import sqlite3

from crashcourse.claims import fence, orders
from crashcourse.effects import FencingToken
from crashcourse.services import supplier as supplier_client
from crashcourse.store import immediate, sql_list
from crashcourse.validate import clock


def cancel_here(conn: sqlite3.Connection, work_id: str) -> tuple[int, int]:
    """The shop's part, in ONE transaction: the work CANCELLED under a new
    generation, and its orders that never left revoked; (generation, revoked)."""
    with immediate(conn):
        generation = fence.cancel_locked(conn, work_id, clock())
        revoked = orders.revoke_unsent(conn, work_id)
    return generation, revoked


def fence_supplier(url: str, work_id: str, generation: int) -> None:
    """The cancel reaching the supplier: its fence for ``work_id`` raised to
    the cancel's ``generation`` and confirmed, or ``orders.ResponseLost``."""
    try:
        supplier_client.fence_work(url, FencingToken(work_id, generation))
    except (OSError, ValueError) as unconfirmed:  # no answer, 503, a 404, garbled
        raise orders.ResponseLost(
            f"the supplier's fence is not confirmed: {unconfirmed!r}") from None


def uncertain_orders(conn: sqlite3.Connection, work_id: str) -> list[str]:
    """The operation keys of ``work_id``'s orders that may have gone out."""
    return [row["operation_key"] for row in conn.execute(
        "SELECT operation_key FROM orders"
        " WHERE work_id = :work_id"
        # a request may have reached the supplier: ask, never resend
        f" AND status IN {sql_list(orders.UNCERTAIN)}"
        " ORDER BY rowid",
        {"work_id": work_id},
    )]


def settle(conn: sqlite3.Connection, operation_key: str, url: str) -> str:
    """Look one uncertain order up, AFTER the fence: a receipt is recorded
    (CONFIRMED); NOT_FOUND is recorded REVOKED, since the supplier now refuses
    the request whenever it arrives. The supplier's answer."""
    answer = orders.lookup(conn, operation_key, url)
    if answer == orders.NOT_FOUND:
        orders.record(conn, operation_key, orders.REVOKED)
    return answer


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    """Cancel and revoke in one transaction, fence the supplier, then look up."""
    generation, revoked = cancel_here(conn, work_id)
    fence_supplier(supplier_url, work_id, generation)
    looked_up = {operation_key: settle(conn, operation_key, supplier_url)
                 for operation_key in uncertain_orders(conn, work_id)}
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
