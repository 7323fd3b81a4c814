"""WRONG ANSWER to exercise 06.2 (chapter 06): the check, then the write.

The mistake: the holder is checked (``fence.assert_current``, with the
refusal recorded) and the quote written afterwards, in a statement of its
own outside the check's transaction. Called on its own it looks right: the
stale claim is refused and the audit row is there. But the write lock is not
held from the check to the write, so a replacement can claim the work in
between and the quote lands under a superseded generation. Caught by
``test_no_replacement_fits_between_the_check_and_the_write``.
"""


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
