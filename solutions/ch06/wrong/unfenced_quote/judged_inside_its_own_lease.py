"""WRONG ANSWER to exercise 06.2 (chapter 06): judged at an instant of its choosing.

The mistake: the fence is copied from chapter 05's ``note``, with its
``now=claim.expires - 1``. The chapter injects the instant to show the rule
without waiting; in a worker it judges the lease one second before its own
end, whatever the clock says. A holder paused past its lease resumes and
replaces the quote: nothing rewrote its row and nobody came after it, so only
the clock could refuse it, and the answer never reads the clock. Every check
that rewrites ``expires`` or supersedes the claim refuses it all the same.
Caught by ``test_a_holder_whose_lease_ran_out_on_the_clock_changes_no_quote``.
"""


def record_quote(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    """The check and the write in one fenced transaction."""
    with fence.fenced(conn, claim, "quote", now=claim.expires - 1):
        conn.execute(UPSERT, params(claim, sku, unit_cents))
