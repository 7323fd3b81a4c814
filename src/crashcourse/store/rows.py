"""Rows and errors as sqlite3 hands them out, from another driver (chapters
10 and 11).

Two adapters let the runtime's modules run on something else than a sqlite3
connection: the PostgreSQL store (``crashcourse.store.postgres``, through psycopg)
and chapter 11's recording SQLite (``crashcourse.powerloss.vfs``, through
apsw). The modules read what sqlite3 gives them: rows by position and by
column name, and sqlite3's exception classes, which they catch (a broken
unique key: ``IntegrityError``; a lock waited out: ``OperationalError``
whose words say "locked"). Both adapters give them exactly that, from here:
one ``Row`` and one way to turn a driver's error into sqlite3's. Each
adapter names its own driver's classes (``as_sqlite``'s table); nothing
here imports a driver.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:
    from collections.abc import Iterable

# The words of SQLite's own busy error, which callers look for ("locked"):
# a lock another driver waited out reads the same.
LOCKED = "database is locked: "


class Row(tuple):
    """A result row read by position or by column name, like ``sqlite3.Row``;
    ``dict(row)`` gives column -> value. ``names`` maps each column to its
    position (``columns``). Introduced in chapter 10."""

    def __new__(cls, names: dict[str, int], values):
        row = super().__new__(cls, values)
        row._names = names
        return row

    def keys(self) -> list[str]:
        return list(self._names)

    def __getitem__(self, key):
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)


def columns(names: Iterable[str]) -> dict[str, int]:
    """Column name -> position, for ``Row``: made once per statement."""
    return {name: position for position, name in enumerate(names)}


def as_sqlite(error: Exception, table, default=None) -> Exception | None:
    """The sqlite3 exception for a driver's ``error``: the first entry
    ``(driver class, sqlite3 class, words)`` of ``table`` that ``error`` is
    an instance of, its message prefixed by ``words``; else ``default`` (a
    sqlite3 class), or None: let the driver's own error through."""
    for theirs, ours, words in table:
        if isinstance(error, theirs):
            return ours(words + str(error))
    return None if default is None else default(str(error))
