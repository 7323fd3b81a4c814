"""The first quote is kept for ever. Caught by
``test_the_current_holder_replaces_its_own_quote``."""


def record_quote(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    """The check and the write in one fenced transaction; never overwrite."""
    with fence.fenced(conn, claim, "quote"):
        conn.execute("INSERT INTO quotes (work_id, sku, unit_cents, generation)"
                     " VALUES (:work_id, :sku, :unit_cents, :generation)"
                     " ON CONFLICT (work_id, sku) DO NOTHING",
                     params(claim, sku, unit_cents))
