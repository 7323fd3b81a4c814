"""What a PostgreSQL statement read, from the server's own counters: the
plan tests of the claim (a claim must read a few rows, whatever the
statistics say) share one way to count."""

from __future__ import annotations

import pytest


def rows_read(conn) -> int:
    """Rows and index entries this store's work table has given out so far
    (PostgreSQL's own counters, flushed now: 15 and later)."""
    if int(conn.execute("SHOW server_version_num").fetchone()[0]) < 150000:
        pytest.skip("pg_stat_force_next_flush needs PostgreSQL 15")
    conn.execute("SELECT pg_stat_force_next_flush()")  # at this statement's end
    conn.execute("SELECT pg_stat_clear_snapshot()")
    return conn.execute(
        "SELECT coalesce(seq_tup_read, 0) + (SELECT sum(idx_tup_read)"
        " FROM pg_stat_user_indexes WHERE relid = 'work'::regclass)"
        " FROM pg_stat_user_tables WHERE relid = 'work'::regclass").fetchone()[0]
