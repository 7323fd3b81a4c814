"""WRONG ANSWER to exercise 06.2 (chapter 06): a fence that compares only the
generation.

The mistake: the fence is written by hand, in the write's own transaction
(right), but it asks one question: is the row's generation still mine? That
catches a replacement and an operator's cancel, which both move the
generation on. It lets through a holder whose lease ran out with nobody after
it, a holder that already finished its work, and any holder while the
runtime is paused: none of those changes the generation. Caught by
``test_a_holder_that_stopped_being_current_changes_no_quote`` (``lapsed``,
``finished``, ``paused``).
"""


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
