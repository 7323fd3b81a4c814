"""The check, then the write. Caught by
``test_no_replacement_fits_between_the_check_and_the_write``."""


def record_quote(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    """Check that ``claim`` is current, then write the quote."""
    try:
        fence.assert_current(conn, claim)  # refused here if it is stale
    except fence.StaleClaim as refused:
        fence.record_refusal(conn, claim, "quote", refused.reason)
        raise
    conn.execute(UPSERT, params(claim, sku, unit_cents))  # then the write
