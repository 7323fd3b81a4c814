"""A fence that compares only the generation. Caught by
``test_a_holder_that_stopped_being_current_changes_no_quote``."""

from crashcourse.store import immediate


def record_quote(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    """The generation compared and the quote written under one write lock."""
    try:
        with immediate(conn):
            row = conn.execute("SELECT generation FROM work WHERE id = :id",
                               {"id": claim.id}).fetchone()
            if row is None or row["generation"] != claim.generation:
                raise fence.StaleClaim("superseded", claim)
            conn.execute(UPSERT, params(claim, sku, unit_cents))
    except fence.StaleClaim as refused:
        fence.record_refusal(conn, claim, "quote", refused.reason)
        raise
