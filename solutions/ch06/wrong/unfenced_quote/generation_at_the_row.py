"""WRONG ANSWER to exercise 06.2 (chapter 06): the generation compared at the row.

The mistake: instead of the fence, the upsert refuses to replace a quote
written by a NEWER generation (the supplier's rule from the chapter, copied
to the row). The stale holder's quote for flour no longer replaces the
current one, but nothing refuses the stale holder: no ``StaleClaim``, no
refusal recorded, and a quote for an item nobody quoted yet lands under
generation 1. Caught by ``test_the_restored_fence_keeps_the_current_quote``
and ``test_a_stale_holder_cannot_add_a_quote_either``.
"""


def record_quote(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    """A quote replaces only one written by the same or an older generation."""
    conn.execute(UPSERT + " WHERE excluded.generation >= quotes.generation",
                 params(claim, sku, unit_cents))
