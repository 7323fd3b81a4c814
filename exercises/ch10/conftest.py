"""Chapter 10's exercises run on a PostgreSQL server: one per test session
(a throwaway one, started here in about a second, or yours when
CRASHCOURSE_PG_URL names it), and a fresh, empty schema for every test.

There is no skip: without a server these tests FAIL, saying why. A grader
that skipped would report an unsolved stub as "9 skipped", exit 0.

Each test's schema carries the grader's DATABASE clock: ``clock_timestamp()``,
``now()``, ``statement_timestamp()`` and ``transaction_timestamp()`` of that
schema shadow PostgreSQL's own (``search_path`` puts the schema before
``pg_catalog``, on every connection ``open_store`` makes) and read the real
ones plus a shift, or a frozen instant. ``db_clock.shift(3600)`` makes the
database an hour ahead of every worker's clock FOR REAL: nothing in the
worker's process is patched, so an answer that reads any clock of its own
host (``time.time``, ``time.time_ns``, ``datetime.now``) is an hour off.
``db_clock.freeze(at)`` stops it at an exact instant, for the boundary of a
lease. Every reader of the store's clock (``store.now``, the runtime's claim)
reads the same shadowed clock, so the store stays consistent with itself.
"""

from __future__ import annotations

import uuid

import pytest

CLOCK_SQL = """
CREATE TABLE {s}.grader_clock (shift float8 NOT NULL DEFAULT 0, frozen float8);
INSERT INTO {s}.grader_clock DEFAULT VALUES;
CREATE FUNCTION {s}.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE AS $$
  SELECT coalesce(pg_catalog.to_timestamp(frozen), pg_catalog.clock_timestamp()
                  + pg_catalog.make_interval(secs => shift)) FROM {s}.grader_clock $$;
"""
# the clocks that PostgreSQL fixes at the start of a statement or transaction:
# shifted the same way, so they differ from clock_timestamp() as they really do
FIXED_AT_START = """
CREATE FUNCTION {s}.{name}() RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT coalesce(pg_catalog.to_timestamp(frozen), pg_catalog.{name}()
                  + pg_catalog.make_interval(secs => shift)) FROM {s}.grader_clock $$;
"""


@pytest.fixture(scope="session")
def pg_server():
    """The session's server: the reader's own, or the book's throwaway one
    (PostgreSQL 16 from the ``pgserver`` wheel). None: the test fails."""
    from crashcourse.store import postgres_server

    if postgres_server.own_server() is None and postgres_server.binaries() is None:
        pytest.fail(f"chapter 10's exercises need PostgreSQL: pip install pgserver"
                    f" (in requirements), or set {postgres_server.URL_ENV}",
                    pytrace=False)
    with postgres_server.running() as server:  # the reader's own is never stopped
        yield server


@pytest.fixture
def schema(pg_server):
    """A fresh schema of this test's, with the grader's database clock."""
    from crashcourse.store import postgres as pgstore

    name = "ex10_" + uuid.uuid4().hex[:12]
    pgstore.create_schema(pg_server.url, name)
    with pgstore.connect(pg_server.url).raw as raw:
        raw.execute(CLOCK_SQL.format(s=name))
        for fixed in ("now", "statement_timestamp", "transaction_timestamp"):
            raw.execute(FIXED_AT_START.format(s=name, name=fixed))
    yield name
    with pgstore.connect(pg_server.url).raw as raw:
        raw.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
def store_url(pg_server, schema):
    """The address of this test's store (its schema) on the server."""
    joiner = "&" if "?" in pg_server.url else "?"
    return f"{pg_server.url}{joiner}schema={schema}"


@pytest.fixture
def open_store(store_url, schema):
    """``open_store()``: a connection to this test's store that reads the
    grader's database clock (closed at the test's end)."""
    from crashcourse.store import connect

    opened = []

    def open_one():
        conn = connect(store_url)
        conn.raw.execute(f'SET search_path TO "{schema}", pg_catalog')
        opened.append(conn)
        return conn

    yield open_one
    for conn in opened:
        conn.close()


class DatabaseClock:
    """The grader's hold on this test's database clock."""

    def __init__(self, conn, schema):
        self.conn, self.schema = conn, schema

    def shift(self, seconds: float) -> None:
        """The database's clock runs ``seconds`` ahead of the real one."""
        self.conn.raw.execute(f'UPDATE "{self.schema}".grader_clock'
                              " SET shift = %s, frozen = NULL", (float(seconds),))

    def freeze(self, at: float) -> None:
        """The database's clock reads ``at`` until moved or thawed."""
        self.conn.raw.execute(f'UPDATE "{self.schema}".grader_clock'
                              " SET frozen = %s", (float(at),))

    def thaw(self) -> None:
        self.conn.raw.execute(f'UPDATE "{self.schema}".grader_clock SET frozen = NULL')


@pytest.fixture
def db_clock(open_store, schema):
    return DatabaseClock(open_store(), schema)
