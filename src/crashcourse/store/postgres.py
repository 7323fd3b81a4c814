"""The runtime's store on a PostgreSQL server (chapter 10).

SERVER-ONLY: this module imports ``psycopg`` (PostgreSQL's driver). Nothing
imports it unless a store is a server's URL (``store.connect``), so the
runtime itself still needs only the standard library.

``connect`` gives a psycopg connection the interface every runtime module
already uses on ``sqlite3``, so one module's code runs on both:

* ``execute(sql, {named})``: ``:name`` parameters become psycopg's
  ``%(name)s``, bound on the client (``ClientCursor``), so ``:work_id IS
  NULL`` needs no cast, as in SQLite;
* rows read by position and by column name (``rows.Row``), ``dict(row)``;
* autocommit, with transactions opened by ``begin`` (``store.immediate``
  calls it): ``POSTGRES.begin`` means what ``BEGIN IMMEDIATE`` means in
  SQLite, ONE writer at a time: a transaction-scoped advisory lock on the
  store. The claim and the fenced writes, the hot paths, begin with the same
  lock SHARED instead (``POSTGRES.begin_shared``) and rely on row locks
  against each other (``FOR UPDATE``, ``SKIP LOCKED``): every other writer
  still excludes them. A ``COMMIT`` after a statement failed inside the
  transaction is refused, where PostgreSQL would roll back in silence;
* psycopg's errors arrive as the ``sqlite3`` classes the modules catch
  (``rows.as_sqlite``: a unique key broken, ``sqlite3.IntegrityError``; a
  lock waited out, ``sqlite3.OperationalError``, "database is locked").

The connection says it is a server's: ``Connection.dialect`` is
``dialect.POSTGRES``, where every SQL spelling that differs from SQLite's is
kept (``lastrowid`` is ``RETURNING``, a numbered key an identity, the
database's clock...).
"""

from __future__ import annotations

import re
import sqlite3
from functools import lru_cache

import psycopg
from psycopg import errors
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row
from psycopg.types.string import StrDumper

from crashcourse.store.dialect import POSTGRES
from crashcourse.store.rows import LOCKED, Row, as_sqlite, columns

LOCK_TIMEOUT_MS = 5000  # a waited-out lock is "busy", as SQLite's busy timeout
# A transaction here lasts milliseconds. One idle for 2 s is a holder cut off
# (or frozen) mid-write: the server ends it, its row locks free the work, and
# its late COMMIT finds the connection closed. Without this, the work waits
# for the partition to heal, however long.
IDLE_IN_TRANSACTION_MS = 2000
# A literal, a comment, a named parameter or a per cent sign, left to right.
_PIECES = re.compile(r"('(?:[^']|'')*')|(--[^\n]*)|(?<![:\w]):([A-Za-z_]\w*)|(%)")
# psycopg's error -> the sqlite3 class the modules catch, and its words: a
# waited-out lock reads "database is locked" as SQLite's busy error does.
ABORTED = "transaction aborted by an earlier error"
_AS_SQLITE = ((errors.IntegrityError, sqlite3.IntegrityError, ""),
              (errors.LockNotAvailable, sqlite3.OperationalError, LOCKED),
              (errors.DeadlockDetected, sqlite3.OperationalError, LOCKED),
              (errors.SerializationFailure, sqlite3.OperationalError, LOCKED),
              (errors.InFailedSqlTransaction, sqlite3.OperationalError,
               ABORTED + ": "))


@lru_cache(maxsize=512)
def _names(fields: tuple[bytes, ...], encoding: str) -> dict[str, int]:
    """Column name -> position (``rows.columns``), once per shape of result."""
    return columns(field.decode(encoding) for field in fields)


def _row_maker(cursor):
    # The result's own field names, not ``cursor.description``: that builds
    # one Column object per column for every statement run, and was a third
    # of the client's time per claim (issue 24). The dict is shared, read-only.
    result = cursor.pgresult
    names = {} if result is None else _names(
        tuple(result.fname(i) for i in range(result.nfields)),
        cursor.connection.info.encoding)
    return lambda values: Row(names, values)


@lru_cache(maxsize=512)
def translate(sql: str, nulls: frozenset[str] = frozenset()) -> str:
    """SQLite's ``:name`` as psycopg's ``%(name)s``, outside literals and
    comments; every ``%`` doubled (psycopg reads them all). A parameter that
    is None is written as ``NULL``: the server cannot type ``$1 IS NULL``
    alone. Chapter 10."""
    def piece(found: re.Match) -> str:
        literal, comment, name, _ = found.groups()
        if name is not None:
            return "NULL" if name in nulls else f"%({name})s"
        return (literal or comment or "%").replace("%", "%%")
    return _PIECES.sub(piece, sql)


class Connection:
    """A psycopg connection the runtime's modules use as a ``sqlite3`` one.

    Introduced in chapter 10."""

    dialect = POSTGRES  # what ``store.dialect`` reads: a server's spellings

    def __init__(self, raw: psycopg.Connection):
        self.raw = raw
        self._hot = None  # first_row's cursor, made on first use
        # one advisory lock per store: a database may hold several (schemas)
        self.store_lock = raw.execute(
            "SELECT hashtextextended(current_database() || '.' || current_schema(),"
            " 0)").fetchone()[0]

    def execute(self, sql: str, parameters=None):
        if sql.strip().upper() == "COMMIT":  # store.immediate's: never silent
            return self.commit()
        try:
            if not parameters:  # no formatting: '%' stays as written
                cursor = self.raw.execute(sql)
            elif ";" in sql:  # several statements: bound here, sent as text
                cursor = psycopg.ClientCursor(self.raw).execute(
                    translate(sql), parameters)
            else:  # bound on the server: planned once, prepared from then on
                nulls = frozenset(k for k, v in parameters.items() if v is None)
                cursor = self.raw.execute(translate(sql, nulls), parameters)
        except psycopg.Error as error:
            ours = as_sqlite(error, _AS_SQLITE)
            if ours is None:
                raise
            raise ours from error
        while cursor.nextset():  # several statements in one trip: the last's rows
            pass
        return cursor

    def first_row(self, sql: str, parameters: dict) -> tuple | None:
        """``execute(sql, parameters).fetchone()`` for a hot path (a claim):
        one statement, bound on the server, its first row as a plain tuple,
        read at once on a cursor this connection keeps for it. A cursor made
        per statement, and a ``Row`` per row, were a third of the client's
        time per claim (issue 24)."""
        if self._hot is None:
            self._hot = self.raw.cursor(row_factory=tuple_row)
        nulls = frozenset(k for k, v in parameters.items() if v is None)
        try:
            return self._hot.execute(translate(sql, nulls), parameters).fetchone()
        except psycopg.Error as error:
            ours = as_sqlite(error, _AS_SQLITE)
            if ours is None:
                raise
            raise ours from error

    def commit(self) -> None:
        """COMMIT, refused loudly where PostgreSQL would roll back in silence:
        a statement failed inside the transaction and someone went on."""
        if self.raw.info.transaction_status == TransactionStatus.INERROR:
            self.raw.execute("ROLLBACK")
            raise sqlite3.OperationalError(ABORTED)
        self.raw.execute("COMMIT")

    def begin(self, *, shared: bool, then: str = "", parameters=None):
        """BEGIN and the store lock, EXCLUSIVE (SQLite's one writer) or SHARED
        (a hot path that locks its own rows), and ``then``, a statement whose
        snapshot is taken under the lock, all in ONE round trip: its cursor.
        ``store.immediate`` calls it, and ends the transaction."""
        begin = POSTGRES.begin_shared if shared else POSTGRES.begin
        try:
            return self.execute(";".join(filter(None, (begin, then))),
                                {**(parameters or {}), "store_lock": self.store_lock})
        except BaseException:  # the lock waited out: no half-open transaction
            if self.raw.info.transaction_status != TransactionStatus.IDLE:
                self.raw.execute("ROLLBACK")
            raise

    def server_time(self) -> float:
        """The server's clock, in seconds since the epoch, read now."""
        return self.raw.execute(POSTGRES.store_clock).fetchone()[0]

    def close(self) -> None:
        self.raw.close()


def connect(url: str, *, schema: str | None = None) -> Connection:
    """Open the store at ``url`` (in ``schema``, if given), autocommit.
    Nothing is created: ``store.connect`` asks for the tables it requires.
    Chapter 10."""
    options = (f"-c lock_timeout={LOCK_TIMEOUT_MS}"
               f" -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}")
    if schema is not None:
        if not schema.isidentifier():
            raise ValueError(f"not a schema name: {schema!r}")
        options += f" -c search_path={schema}"
    raw = psycopg.connect(url, autocommit=True, options=options,
                          row_factory=_row_maker)
    raw.adapters.register_dumper(str, StrDumper)  # text, not "unknown": typed
    return Connection(raw)


def connect_url(url: str) -> Connection:
    """``connect`` for a store named by one URL, as ``store.connect`` gets it:
    ``postgresql://user:pass@host:port/db?schema=S`` (``schema`` is ours, not
    libpq's: it is taken off before the driver sees the URL). Chapter 10."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    schema = [value for key, value in query if key == "schema"]
    rest = urlencode([(key, value) for key, value in query if key != "schema"])
    return connect(urlunsplit(parts._replace(query=rest)),
                   schema=schema[-1] if schema else None)


def create_schema(url: str, schema: str) -> None:
    """A fresh, empty schema: one store per test or per experiment (chapter 10)."""
    with connect(url).raw as raw:
        raw.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        raw.execute(f'CREATE SCHEMA "{schema}"')
