"""Judged at an instant of its choosing. Caught by
``test_a_holder_whose_lease_ran_out_on_the_clock_changes_no_quote``."""


def record_quote(
    conn: sqlite3.Connection, claim: Claim, sku: str, unit_cents: int
) -> None:
    with fence.fenced(conn, claim, "quote", now=claim.expires - 1):
        conn.execute(UPSERT, params(claim, sku, unit_cents))
