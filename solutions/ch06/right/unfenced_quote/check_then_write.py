"""A correct answer that puts the fence back another way: the check and the
write in ONE ``BEGIN IMMEDIATE`` transaction written out (``immediate`` and
``fence.assert_current``), the refusal noted as ``fenced`` notes it, and the
lease checked again before the commit. The same guarantee, unwrapped."""


def record_quote(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    from crashcourse.store import immediate

    try:
        with immediate(conn):  # the write lock before the check
            read, _ = fence.assert_current(conn, claim)
            conn.execute(UPSERT, params(claim, sku, unit_cents))
            fence.lease_held_at_commit(conn, claim, read["expires"])
    except fence.StaleClaim as refused:
        fence.record_refusal(conn, claim, "quote", refused.reason)
        raise
