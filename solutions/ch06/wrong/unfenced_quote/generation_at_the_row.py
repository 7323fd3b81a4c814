"""The generation compared at the row. Caught by
``test_the_restored_fence_keeps_the_current_quote`` and
``test_a_stale_holder_cannot_add_a_quote_either``."""


def record_quote(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    """A quote replaces only one written by the same or an older generation."""
    conn.execute(UPSERT + " WHERE excluded.generation >= quotes.generation",
                 params(claim, sku, unit_cents))
