"""Open SQLite files the same way everywhere (introduced in chapter 00).

Every durable table in the book lives in a SQLite file opened by ``connect``:

* WAL journal, so readers never block the one writer;
* a busy timeout, so a second writer waits instead of failing at once;
* foreign keys on (SQLite leaves them off by default);
* an explicit ``synchronous`` level. ``NORMAL`` in WAL mode survives a killed
  process (the case every experiment in this book exercises): a committed
  transaction is in the WAL file and the OS page cache, and the next opener
  replays it. ``FULL`` also syncs the WAL at every commit, which is what a
  power loss or kernel panic needs: chapter 11 rebuilds the disk at every
  point of a run and shows NORMAL losing acknowledged commits (never
  corrupting the file) where FULL loses none.

A store is created only by its module's ``install``. Everything else opens
it with ``require=`` the tables it reads: a file that is missing, truncated to
0 bytes or never installed is refused with ``StoreMissing`` and left as it was,
never silently replaced by a new, empty store (a payment history that vanished
must not read as "never paid"). A file that opens but is DAMAGED is refused
too (``StoreDamaged``), before anything reads or writes it: ``PRAGMA
quick_check`` for every required store, and for a system of record
(``record=True``) the slower ``integrity_check``, which also compares every
index with its table. Only the second sees a payment whose key was zeroed in
the key's index: the lookup by key then finds nothing, and a service that
trusted it would charge again.

A program's OWN store (``own=`` the tables it keeps there: a worker's shop,
checkpoint or state file) is created only where NO file exists, and atomically
(made aside, then linked into place, so a second opener never sees it half
made). A file that is there is trusted only once it proves to be this
program's: not 0 bytes, a SQLite database, holding no table but ``own``'s
(another program's database, the payment service's say, is refused, never
written into), and sound by the full ``integrity_check``, since an index that
lost a row hides a recorded effect from the lookup that would have found it
(a restock note posted twice, issue 35). Each refusal is ``StoreMissing`` or
``StoreDamaged`` and leaves the file byte for byte as it was.

A SYSTEM OF RECORD (``record=True``: every service in
``crashcourse.services``) opens at ``synchronous=FULL``. Chapter 11 shows why:
the fsync belongs to the store whose rows say what happened outside, not to
the worker's own progress, which may stay at NORMAL.

Connections are in autocommit mode (``isolation_level=None``): transactions
are opened explicitly with ``immediate`` so the reader sees where each one
begins and ends.

From chapter 10 a store may also be a PostgreSQL server's (an address
``postgresql://...``): ``connect`` reads the address against the registry of
backends (``crashcourse.store.dialect.BACKENDS``) once, and opens a server's
through its adapter, ``crashcourse.store.postgres``, imported only then;
``dialect(conn)`` is the backend a connection is on, the one object a module
asks for every spelling, and every step, that differs between the two.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

from crashcourse.store.dialect import BACKENDS, SQLITE, Dialect, backend_for

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["SYNCHRONOUS_LEVELS", "SERVER_SCHEMES", "DEFAULT_BUSY_TIMEOUT_MS",
    "StoreMissing", "StoreDamaged", "connect", "refuse_cut_short", "refuse_damaged",
    "enter_wal", "on_server", "dialect", "UnsupportedBackend", "check_backend",
    "dialect_for", "lock_waited_out", "table_exists", "tables", "now", "immediate",
    "write_lock_free", "opening_with", "opened", "ensure_schema", "count_rows",
    "table_rows", "sql_list", "postgres", "postgres_server", "SQLITE", "Dialect"]

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:  # only for hints: workers start faster without pathlib
    from pathlib import Path

SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")
_CONNECTORS: list = []  # see ``opening_with``
SERVER_SCHEMES = tuple(scheme for backend in BACKENDS for scheme in backend.schemes)
DEFAULT_BUSY_TIMEOUT_MS = 5000


class StoreMissing(RuntimeError):
    """An installed store was required; the file is absent, empty or lacks its
    tables. Nothing was created or changed (issue 14, "no silent loss")."""


class StoreDamaged(StoreMissing):
    """An installed store opened, but SQLite's own check of its pages (and,
    for a system of record, of every index against its table) failed. Nothing
    was read from it as history and nothing was written (chapter 11)."""


def connect(
    path: str | Path,
    *,
    synchronous: str = "NORMAL",
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    require: tuple[str, ...] = (),
    record: bool = False,
    own: tuple[str, ...] = (),
) -> sqlite3.Connection:
    """Open ``path`` with WAL, a busy timeout, foreign keys and ``synchronous``.

    With ``require`` (table names) the file must already hold those tables:
    otherwise ``StoreMissing``, and the file is neither created nor written;
    a damaged one: ``StoreDamaged``. ``record=True`` opens a system of record:
    ``synchronous=FULL`` whatever was asked, and the full integrity check.
    ``own`` (without ``require``) names the tables of the caller's own store:
    created where no file exists, else refused unless it is that store and
    sound (``StoreMissing``/``StoreDamaged``, nothing written; issue 35)."""
    if record is not True and record is not False:
        raise TypeError(f"record must be True or False, got {record!r}")
    level = "FULL" if record else synchronous.upper()
    if level not in SYNCHRONOUS_LEVELS:
        raise ValueError(f"synchronous must be one of {SYNCHRONOUS_LEVELS}")
    if isinstance(busy_timeout_ms, bool) or not isinstance(busy_timeout_ms, int):
        raise TypeError("busy_timeout_ms must be an int")
    backend = backend_for(path)
    if backend.adapter:  # chapter 10: the same modules on a PostgreSQL server
        return _open_server(backend, path, require)
    for connector in reversed(_CONNECTORS):
        conn = connector(path, synchronous=level, busy_timeout_ms=busy_timeout_ms,
                         require=require)
        if conn is not None:
            if require:
                refuse_damaged(conn, path, record)
            return conn
    if own and not require:
        conn = _open_own(path, busy_timeout_ms / 1000, tuple(own), level)
    else:
        conn = _open(path, busy_timeout_ms / 1000, require, record)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    # Before the switch to WAL: creating a new file then syncs at this level,
    # not at the default FULL (three fewer fdatasyncs per new file in NORMAL).
    conn.execute(f"PRAGMA synchronous={level}")
    enter_wal(conn, busy_timeout_ms)
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _open(path, timeout: float, require: tuple[str, ...],
          record: bool = False) -> sqlite3.Connection:
    """sqlite3.connect, or, with ``require``, open read-write WITHOUT create
    and look for the tables, and for damage, before anything (the switch to
    WAL) writes."""
    if not require:
        return sqlite3.connect(path, isolation_level=None, timeout=timeout)
    import os  # already loaded by the interpreter: no start-up cost

    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        raise StoreMissing(f"{path}: no store here (missing or 0 bytes); "
                           "only install creates one")
    conn = sqlite3.connect(_rw_uri(path), uri=True, isolation_level=None,
                           timeout=timeout)
    try:
        missing = sorted(table for table in require
                         if conn.execute(SQLITE.table_exists,
                                         {"table": table}).fetchone() is None)
    except sqlite3.OperationalError:  # locked, busy: not an answer about the file
        conn.close()
        raise
    except sqlite3.DatabaseError as bad:  # not a database, or a broken one
        conn.close()
        if "malformed" in str(bad):
            raise StoreDamaged(f"{path}: damaged, refused before any read or "
                               f"write ({bad})") from None
        raise StoreMissing(f"{path}: not a store ({bad})") from None
    if missing:
        conn.close()
        raise StoreMissing(f"{path}: not installed (no table {', '.join(missing)})")
    try:
        refuse_damaged(conn, path, record)
        refuse_cut_short(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def refuse_cut_short(conn, path) -> None:
    """``StoreDamaged`` for a file that is not whole pages long: SQLite writes
    its file a page at a time, and reads a page cut short as zeros, so a file
    cut mid-page can pass both checks while its last page lost what it held."""
    import os

    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    if os.path.getsize(path) % page_size:
        raise StoreDamaged(f"{path}: damaged, refused before any read or write "
                           f"(cut short: not whole {page_size}-byte pages)")


def _open_own(path, timeout: float, own: tuple[str, ...],
              level: str) -> sqlite3.Connection:
    """A program's own store: made where nothing is, else checked to be this
    program's and sound before anything reads or writes it (issue 35)."""
    import os

    if not os.path.lexists(path):
        _create(path, level)
    if not os.path.isfile(path):  # a directory, a device, a dangling symlink
        raise StoreMissing(f"{path}: not a regular file; refused")
    if os.path.getsize(path) == 0:  # not made by ``_create``: someone else's
        raise StoreMissing(f"{path}: 0 bytes, not a store; refused, not replaced")
    conn = sqlite3.connect(_rw_uri(path), uri=True, isolation_level=None,
                           timeout=timeout)
    try:
        tables = {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")}
        foreign = sorted(tables - set(own))
        if foreign:
            raise StoreMissing(f"{path}: not this program's store (it holds "
                               f"{', '.join(foreign[:3])}); refused, not written")
        refuse_damaged(conn, path, record=True)
        refuse_cut_short(conn, path)
    except sqlite3.OperationalError:  # locked, busy: not an answer about the file
        conn.close()
        raise
    except sqlite3.DatabaseError as bad:  # not a database, or a broken one
        conn.close()
        if "malformed" in str(bad):
            raise StoreDamaged(f"{path}: damaged, refused before any read or "
                               f"write ({bad})") from None
        raise StoreMissing(f"{path}: not a store ({bad})") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _create(path, level: str) -> None:
    """A new, empty WAL store at ``path``, made aside and hard-linked into
    place: an opener never finds it 0 bytes, and of two creators racing, the
    second opens the first's (the link fails; nothing is overwritten)."""
    import os

    folder, name = os.path.split(os.path.abspath(os.fspath(path)))
    aside = os.path.join(folder, f".{name}.new-{os.getpid()}")
    try:
        fresh = sqlite3.connect(aside, isolation_level=None)
        try:
            fresh.execute(f"PRAGMA synchronous={level}")
            fresh.execute("PRAGMA journal_mode=WAL")  # writes the header
        finally:
            fresh.close()
        try:
            os.link(aside, path)
        except FileExistsError:
            pass  # another opener made it first: check and open theirs
    finally:
        for leftover in (aside, f"{aside}-wal", f"{aside}-shm"):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass


def _rw_uri(path) -> str:
    """``path`` as a read-write URI that never creates the file."""
    import os

    where = os.path.abspath(os.fspath(path))  # no pathlib: workers start light
    for char, escaped in (("%", "%25"), ("?", "%3F"), ("#", "%23")):
        where = where.replace(char, escaped)
    return f"file:{where}?mode=rw"


def _open_server(backend: Dialect, url: str, require: tuple[str, ...]):
    """A server's store through ``backend``'s adapter; with ``require``, its
    tables must exist, else ``StoreMissing`` and nothing is created (chapter
    10)."""
    from importlib import import_module

    try:
        adapter = import_module(backend.adapter)
    except ModuleNotFoundError as missing:  # the optional part, not installed
        raise ModuleNotFoundError(
            f"a postgresql:// store needs {missing.name}: install the package with"
            " its postgres extra (pip install \"/path/to/clone[postgres]\")",
            name=missing.name) from None

    conn = adapter.connect_url(url)
    try:
        missing = [table for table in require if not table_exists(conn, table)]
    except BaseException:
        conn.close()
        raise
    if missing:
        conn.close()
        raise StoreMissing(f"{url.rsplit('@', 1)[-1]}: not installed"
                           f" (no table {', '.join(missing)})")
    return conn


def refuse_damaged(conn, path, record: bool, schema: str = "main") -> None:
    """``StoreDamaged`` unless SQLite finds the file sound: ``quick_check``
    (every page readable and well formed), or for a system of record
    ``integrity_check``, which also matches every index to its table.
    ``schema`` names an attached file (the broker, chapter 09)."""
    if not schema.isidentifier():
        raise ValueError(f"not a schema name: {schema!r}")
    pragma = "integrity_check(1)" if record else "quick_check(1)"
    try:
        verdict = conn.execute(f"PRAGMA {schema}.{pragma}").fetchone()[0]
    except sqlite3.OperationalError:  # locked, busy: no answer about the file
        raise
    except sqlite3.DatabaseError as bad:  # "malformed": the answer is no
        verdict = str(bad)
    if verdict != "ok":
        said = " ".join(verdict.replace(f"*** in database {schema} ***", "").split())
        raise StoreDamaged(f"{path}: damaged, refused before any read or write "
                           f"({said})")


def enter_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """Switch a file to WAL, waiting (bounded) while another opener holds it.

    Two processes opening a NEW file at the same instant both try to switch it
    to WAL; SQLite answers the loser "database is locked" at once, without
    its busy handler. Retry within the busy timeout instead of dying."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as busy:
            if "locked" not in str(busy) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def on_server(path) -> bool:
    """Whether ``path`` names a server's store, opened through an adapter
    (``postgresql://...[?schema=S]``, chapter 10); anything else is a SQLite
    file. Read from the registry (``backend_for``)."""
    return bool(backend_for(path).adapter)


def dialect(conn) -> Dialect:
    """The spellings of ``conn``'s database (``crashcourse.store.dialect``):
    ``POSTGRES`` for the adapter's connection, which says so; ``SQLITE`` for
    any other, a sqlite3 connection or chapter 11's recording one. The one
    place a module asks which database it is on (chapter 10)."""
    return getattr(conn, "dialect", SQLITE)


def dialect_for(address) -> Dialect:
    """The backend the store at ``address`` is on, before it is opened: the
    registry's answer (``crashcourse.store.dialect.BACKENDS``), the one
    ``connect`` opens it with."""
    return backend_for(address)


class UnsupportedBackend(ValueError):
    """An install on a database its module does not declare (``RUNS_ON``):
    refused before anything is written (issue 33)."""


def check_backend(conn, runs_on: tuple[Dialect, ...], module: str) -> None:
    """Refuse ``conn`` unless its database is one of ``runs_on``, the
    databases ``module`` declares it runs on (its ``RUNS_ON``). Every
    ``install(conn)`` asks this first: a module on a store it was never
    written for fails in one line, not halfway through its schema."""
    spelled = dialect(conn)
    if spelled not in runs_on:
        raise UnsupportedBackend(
            f"{module} runs on {' and '.join(d.name for d in runs_on)},"
            f" not on {spelled.name}")


def table_exists(conn, table: str) -> bool:
    """Whether ``table`` exists in ``conn``'s store; a read, it creates
    nothing (chapter 07; on either database since chapter 10)."""
    return dialect(conn).has_table(conn, table)


def tables(conn) -> set[str]:
    """The names of the tables in ``conn``'s store; a read (issue 33)."""
    return dialect(conn).tables(conn)


def now(conn, now: float | None = None) -> float:
    """The lease clock: an injected instant, else the STORE's clock. On a
    server that is the database's own clock, one for every host, never the
    worker's (chapter 10); a SQLite file has one host, so it is this one's."""
    from crashcourse.validate import clock

    store_clock = dialect(conn).store_clock
    if now is not None or store_clock is None:
        return clock(now)
    return conn.execute(store_clock).fetchone()[0]


@contextmanager
def immediate(conn: sqlite3.Connection, *, shared: bool = False, then: str = "",
              parameters: dict | None = None) -> Iterator:
    """Run the block in one ``BEGIN IMMEDIATE`` transaction.

    IMMEDIATE takes the write lock before the first read, so a check made inside
    the block (is this key used? is there budget left?) cannot be invalidated by
    another writer before the commit. Any exception rolls the whole block back.
    A busy database raises ``sqlite3.OperationalError`` after the busy timeout:
    callers must treat that as "not done", never fall back to an unchecked path.
    On a server (chapter 10) the same words take one store-wide lock: every
    writer excludes every other, as in SQLite, except the hot paths (a claim, a
    fenced write) which pass ``shared=True``, run side by side and lock their
    own rows instead. SQLite ignores ``shared``: its one writer is the rule.
    ``then``, a statement (with ``parameters``), runs first under the lock,
    and the block gets its cursor instead of ``conn``; on a server it goes in
    the same round trip as the BEGIN (a claim's first, chapter 10).
    """
    found = dialect(conn).begin_write(conn, shared=shared, then=then,
                                      parameters=parameters)
    try:
        if then and found is None:
            found = conn.execute(then, parameters or {})
        yield found if then else conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def lock_waited_out(error: Exception) -> bool:
    """Whether ``error`` is a lock waited out ("not done": try again, or say
    busy), not a fault. Every backend says so in SQLite's words: its own busy
    error, or an adapter's mapped one (``rows.LOCKED``). Issue 33."""
    return "locked" in str(error) or "busy" in str(error)


def write_lock_free(path: str | Path) -> bool:
    """Whether another connection could take ``path``'s write lock right now
    (it takes it and lets it go at once); False while someone holds it. Never
    waits for it (SQLite: busy timeout 0; a server: lock_timeout 1 ms), so the
    answer is the lock's state at that instant, never how long a wait took: a
    probe that a writer holds the lock, that a held step runs under it, that a
    blocked caller cannot have passed it (issue 36)."""
    conn = connect(path)
    try:
        conn.execute(dialect(conn).no_wait)
        try:
            with immediate(conn):
                return True
        except sqlite3.OperationalError as busy:
            if not lock_waited_out(busy):
                raise
            return False
    finally:
        conn.close()


@contextmanager
def opening_with(connector) -> Iterator[None]:
    """Within the block, ``connect`` asks ``connector(path, synchronous=,
    busy_timeout_ms=, require=)`` first; it returns a connection set up as
    ``connect`` would, or None for a file it leaves alone. Chapter 11 opens the
    book's stores through a VFS that records every write and sync, with the
    services' own code unchanged."""
    _CONNECTORS.append(connector)
    try:
        yield
    finally:
        _CONNECTORS.remove(connector)


@contextmanager
def opened(path: str | Path, **options) -> Iterator[sqlite3.Connection]:
    """``connect`` for the length of a block, then close (sqlite3's own ``with``
    only ends a transaction; it never closes the connection)."""
    conn = connect(path, **options)
    try:
        yield conn
    finally:
        conn.close()


def ensure_schema(conn: sqlite3.Connection, ddl: str) -> None:
    """Create tables and indexes from ``ddl`` (statements use IF NOT EXISTS)."""
    with immediate(conn):
        for statement in ddl.split(";"):
            if statement.strip():
                conn.execute(statement)


def count_rows(conn: sqlite3.Connection, table: str) -> int:
    """How many rows ``table`` holds (table names come from code, never input)."""
    if not table.isidentifier():
        raise ValueError(f"not a table name: {table!r}")
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def table_rows(conn: sqlite3.Connection, table: str,
               order_by: str | tuple[str, ...] = "rowid") -> list:
    """Every row of ``table`` as a plain dict, for snapshots and evidence,
    ordered by ``order_by`` (a column, or a tuple of columns: a table's key
    orders it on either backend; ``rowid`` is SQLite's alone)."""
    columns = (order_by,) if isinstance(order_by, str) else tuple(order_by)
    if not (table.isidentifier() and columns
            and all(column.isidentifier() for column in columns)):
        raise ValueError("table and order_by must be identifiers")
    cursor = conn.execute(f"SELECT * FROM {table} ORDER BY {', '.join(columns)}")
    return [dict(row) for row in cursor.fetchall()]


def sql_list(values: tuple[str, ...]) -> str:
    """``('A', 'B')`` for a SQL ``IN``, from a module's status constants.

    The statuses are spelled once, in Python; the schema's CHECKs and the
    queries are built from the same tuples, so they cannot drift apart. Only
    identifiers are accepted: this quotes constants, never input.
    Introduced in chapter 05."""
    for value in values:
        if not (isinstance(value, str) and value.isidentifier()):
            raise ValueError(f"not a status constant: {value!r}")
    return "(" + ", ".join(f"'{value}'" for value in values) + ")"
