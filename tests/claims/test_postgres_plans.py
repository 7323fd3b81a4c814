"""The claim on a server keeps to its indexes whatever the statistics say
(chapter 10, issue 24).

The claim's function plans its statements once per connection, generic; a
plan is made again whenever ANALYZE (autovacuum's, mid-run) gives the table
new statistics. These cases give it the statistics of a busy store, many
live leases, and count the rows each claim reads (PostgreSQL's own counters).
"""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed")

from crashcourse import claims, store  # noqa: E402
from tests.pg_counters import rows_read  # noqa: E402

pytestmark = pytest.mark.postgres_only("a server's plans and its statistics")
LIVE = 1000  # leases held, none run out
QUEUED = 100


@pytest.fixture
def busy(store_at):
    """A store with LIVE held turns and QUEUED queued ones, each its own
    session, analyzed while so: its statistics say most work is held."""
    at = store_at("busy")
    with store.opened(at) as conn:
        claims.install(conn)
        conn.execute(
            "INSERT INTO work (id, origin, session, prompt, subject, role, created,"
            " status, owner, generation, expires) SELECT 'held-' || n, 'held-' || n,"
            " 'held-' || n, 'x', '', 'shop', n, 'RUNNING', 'holder', 1,"
            " extract(epoch FROM now()) + 600 FROM generate_series(1, :live) AS n",
            {"live": LIVE})
        conn.execute(
            "INSERT INTO work (id, origin, session, prompt, subject, role, created)"
            " SELECT 'queued-' || n, 'queued-' || n, 'queued-' || n, 'x', '',"
            " 'shop', :live + n FROM generate_series(1, :queued) AS n",
            {"live": LIVE, "queued": QUEUED})
        conn.execute("ANALYZE work")
    return at


def test_a_claim_reads_a_few_rows_when_statistics_show_many_leases_live(busy):
    """Bug: the probe for a lapsed lease written as ``EXISTS (... expires <=
    now)``: with these statistics its generic plan is a sequential scan
    that stops at the first match, and there is none, so every claim reads
    every row of the table (here ~1,100)."""
    with store.opened(busy) as conn:
        before = rows_read(conn)
        taken = [claims.claim(conn, "w", ttl=600) for _ in range(20)]
        per_claim = (rows_read(conn) - before) / 20
    assert all(claim is not None for claim in taken)
    assert per_claim < 40, per_claim


def test_a_lapsed_lease_is_still_found_and_taken_first(busy):
    """The probe that stays on its index still finds a lease that ran out
    (the one that ends first), and the claim takes that turn before any
    queued one: it is first in claim order."""
    with store.opened(busy) as conn:
        conn.execute("UPDATE work SET expires = 1 WHERE id = 'held-500'")
        got = claims.claim(conn, "w", ttl=600)
        assert (got.id, got.generation) == ("held-500", 2)
        assert claims.claim(conn, "w", ttl=600).id == "queued-1"
