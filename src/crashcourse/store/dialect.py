"""A backend: one object per database, chosen once when a store is opened
(chapter 10).

The runtime's modules write one SQL for SQLite and PostgreSQL wherever the
two agree: named parameters, ``RETURNING``, ``ON CONFLICT``, ``DOUBLE
PRECISION``, ``CHECK``. Where they do not, a module reads the difference, by
name, from its store's ``Dialect``: ``store.dialect(conn)`` is ``POSTGRES``
for a connection of the PostgreSQL adapter (``crashcourse.store.postgres``) and
``SQLITE`` for any other (a sqlite3 connection, chapter 11's recording one).
Each difference is spelled here and nowhere else, and what a module would
otherwise branch on is asked of the object (``begin_write``, ``has_table``,
``tables``); ``BACKENDS`` is the one registry ``store.connect`` reads an
address against (``backend_for``):

* ``schemes``, ``adapter``: the addresses a backend opens (their prefixes;
  none: any other address, a SQLite path) and the module that opens them
  (its ``connect_url``; none: ``store.connect``'s own sqlite3 code).

* ``identity_key``: a key the database numbers and never hands out twice.
  SQLite's ``INTEGER PRIMARY KEY`` alone is the rowid, which gives the
  largest number again once the row holding it is deleted;
  ``AUTOINCREMENT`` never does, which is what an identity promises on a
  server. The rows keyed so are evidence named by their number (a refusal,
  a transcript line, a scheduler decision a run says allowed it): a number
  must name one row for ever, whatever is deleted later.
* ``insertion_order``: the column that says which row was written first
  (SQLite's rowid; on a server a column of its own, ``insertion_column``,
  which a table that needs it declares).
* ``table_exists``: a read that asks whether table ``:table`` exists, and
  creates nothing (one row, or none); ``table_columns``: the names of its
  columns, one row each; ``table_names``: this store's tables, one row each.
* ``no_wait``: what makes this connection's next lock wait fail at once (a
  probe of the lock's state, never of how long a wait took).
* ``server_process``: a read of the server process serving this connection
  (``pid``), none where no server serves it.
* ``lock_row``: what a fenced check adds to its read of the work row: on a
  server fenced writes run side by side, so the check locks the row until
  the write commits (``FOR UPDATE OF work``: the work row alone, not the
  switches it is read with); SQLite's one writer already excludes everyone.
* ``without_rowid``: a table option for a table keyed by its primary key
  alone (SQLite's; every PostgreSQL table is one already).
* ``plan_steps``: the rows of a plan's steps from the JSON list of each
  step's canonical text, ``:steps``, numbered from 1: one statement.
* ``store_clock``: the read of the store's own clock for leases (None: the
  host's, SQLite's only host).
* ``begin``, ``begin_shared``, ``one_writer``: how a write transaction
  begins. SQLite has one writer: ``BEGIN IMMEDIATE`` takes the file's write
  lock whatever the caller asks. A server begins with one transaction-scoped
  lock per store, EXCLUSIVE (SQLite's one writer) or SHARED (a claim, a
  fenced write: they run side by side and lock their own rows).

Strings and flags, and methods that run them on the connection they are
given: nothing here imports a driver, so every module imports it freely
(standard library only).
"""

from __future__ import annotations

from collections import namedtuple

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["Dialect", "SQLITE", "POSTGRES", "BACKENDS", "backend_for"]

# namedtuple rather than a dataclass: every worker imports this at start.
_DialectFields = namedtuple("_DialectFields", (
    "name identity_key insertion_order insertion_column table_exists"
    " table_columns lock_row without_rowid plan_steps store_clock begin"
    " begin_shared one_writer schemes adapter table_names no_wait"
    " server_process"))


class Dialect(_DialectFields):
    """One database's spellings, by name (above); compared by identity:
    ``store.dialect(conn) is POSTGRES``. Introduced in chapter 10."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Dialect({self.name!r})"

    def opens(self, address) -> bool:
        """Whether ``address`` names a store of this backend's (a scheme of
        its own; a backend without schemes opens what no other claims)."""
        return isinstance(address, str) and address.startswith(self.schemes)

    def begin_write(self, conn, *, shared: bool = False, then: str = "",
                    parameters: dict | None = None):
        """Begin ``conn``'s write transaction (``store.immediate``): one
        writer's ``begin`` whatever ``shared`` asks, or the adapter's own
        ``begin`` (the store's lock, EXCLUSIVE or SHARED, and ``then``, in one
        round trip). The cursor of ``then`` when it ran, else None."""
        if self.one_writer:
            conn.execute(self.begin)
            return None
        return conn.begin(shared=shared, then=then, parameters=parameters)

    def has_table(self, conn, table: str) -> bool:
        """Whether ``table`` exists in ``conn``'s store; a read."""
        return conn.execute(self.table_exists,
                            {"table": table}).fetchone() is not None

    def tables(self, conn) -> set[str]:
        """The names of the tables in ``conn``'s store; a read."""
        return {row[0] for row in conn.execute(self.table_names)}


SQLITE = Dialect(
    name="sqlite",
    identity_key="INTEGER PRIMARY KEY AUTOINCREMENT",
    insertion_order="rowid",
    insertion_column="",  # the rowid is there already
    table_exists="SELECT 1 FROM sqlite_master WHERE type = 'table'"
                 " AND name = :table",
    table_columns="SELECT name FROM pragma_table_info(:table)",
    lock_row="",
    without_rowid=" WITHOUT ROWID",
    plan_steps="SELECT :task, key + 1, value FROM json_each(:steps)",
    store_clock=None,
    begin="BEGIN IMMEDIATE",
    begin_shared="BEGIN IMMEDIATE",  # one writer: nothing is shared
    one_writer=True,
    schemes=(),  # any address no other backend claims: a file's path
    adapter="",  # store.connect's own sqlite3 code
    table_names="SELECT name FROM sqlite_master WHERE type = 'table'",
    no_wait="PRAGMA busy_timeout = 0",
    server_process="",  # a file: no server process serves it
)

POSTGRES = Dialect(
    name="postgres",
    identity_key="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    insertion_order="seq",
    insertion_column="seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE",
    table_exists="SELECT 1 WHERE to_regclass(:table) IS NOT NULL",
    # the catalogue the server keeps per schema: this store's table only
    table_columns="SELECT column_name FROM information_schema.columns"
                  " WHERE table_schema = current_schema() AND table_name = :table",
    lock_row=" FOR UPDATE OF work",
    without_rowid="",
    plan_steps="SELECT :task, number, step"
               " FROM json_array_elements_text(:steps::json)"
               " WITH ORDINALITY AS given (step, number)",
    # read when the statement runs (not when the transaction began, as now()
    # is): after a lock wait it is still the present
    store_clock="SELECT extract(epoch FROM clock_timestamp())::float8 AS now",
    begin="BEGIN;SELECT pg_advisory_xact_lock(:store_lock)",
    begin_shared="BEGIN;SELECT pg_advisory_xact_lock_shared(:store_lock)",
    one_writer=False,
    schemes=("postgresql://", "postgres://"),
    adapter="crashcourse.store.postgres",
    table_names="SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema()"
                " AND table_type = 'BASE TABLE'",
    no_wait="SET lock_timeout = 1",  # ms; 0 would mean no limit
    server_process="SELECT pg_backend_pid() AS pid",
)

# The registry: every backend, the one that opens any other address last.
BACKENDS = (POSTGRES, SQLITE)


def backend_for(address) -> Dialect:
    """The backend whose store ``address`` names (``BACKENDS``, in order)."""
    return next(backend for backend in BACKENDS
                if backend.opens(address) or not backend.schemes)
