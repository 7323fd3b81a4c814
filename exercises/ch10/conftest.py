"""Chapter 10's exercises run on a PostgreSQL server: one per test session
(a throwaway one, started here in about a second, or yours when
CRASHCOURSE_PG_URL names it), and a fresh, empty schema for every test."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture(scope="session")
def pg_server():
    """The session's server, or a skip that says why there is none."""
    pytest.importorskip("psycopg", reason="chapter 10 needs psycopg")
    from crashcourse.store import postgres_server

    if postgres_server.own_server() is None and postgres_server.binaries() is None:
        pytest.skip(f"no PostgreSQL: pip install pgserver, or set {postgres_server.URL_ENV}")
    with postgres_server.running() as server:  # the reader's own is never stopped
        yield server


@pytest.fixture
def store_url(pg_server):
    """The address of a fresh store (a schema of its own) on the server."""
    from crashcourse.store import postgres as pgstore

    schema = "ex10_" + uuid.uuid4().hex[:12]
    pgstore.create_schema(pg_server.url, schema)
    joiner = "&" if "?" in pg_server.url else "?"
    yield f"{pg_server.url}{joiner}schema={schema}"
    with pgstore.connect(pg_server.url).raw as raw:
        raw.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
