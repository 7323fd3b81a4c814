"""A correct answer that keeps nothing of the cancel in the process: after
the cancel's transaction commits, the generation it fences the supplier with
(and reports) is read back from the durable work row, not carried in a
variable. A cancelled work is never claimed again, so the row still names
the cancel's generation; a grader must accept the store as the source."""


def cancel_and_settle(
    conn: sqlite3.Connection, work_id: str, supplier_url: str
) -> dict:
    _, revoked = cancel_here(conn, work_id)
    generation = conn.execute("SELECT generation FROM work WHERE id = :id",
                              {"id": work_id}).fetchone()[0]
    fence_supplier(supplier_url, work_id, generation)
    looked_up = {operation_key: settle(conn, operation_key, supplier_url)
                 for operation_key in uncertain_orders(conn, work_id)}
    return {"generation": generation, "revoked": revoked, "looked_up": looked_up}
