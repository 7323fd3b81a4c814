"""What SQLite asks of the disk, in order: a recording VFS (chapter 11).

BOOK-ONLY: this module imports ``apsw`` (a SQLite wrapper that lets Python
implement a VFS, the layer SQLite calls for every file operation). The
runtime never imports it; only chapter 11, its checkpoint and its tests do.

``RecordingVFS`` passes every call through to the operating system's own VFS
and appends an ``Event`` to a ``Recorder`` for each one that changes what a
power cut could leave on disk:

* ``create``: an open that made a new file (its directory entry is new);
* ``write``: bytes at an offset of one file; ``truncate``: a new size;
* ``sync``: ``xSync`` of one file (fsync), which makes its writes durable;
* ``delete``: ``xDelete`` (unlink): the directory entry goes away;
* ``dirsync``: the directory itself was synced (below);
* ``mark``: not the disk's: the run's own note, e.g. ``ack`` when a commit
  returned to its caller.

The directory. A new or removed directory entry is durable only once the
directory is synced, and SQLite does that out of a VFS's sight (inside the
unix VFS's ``xSync`` of a new journal or WAL, or ``xDelete`` with its
``syncDir`` flag, which SQLite sets only at ``synchronous=EXTRA``). So this
VFS syncs the directory ITSELF, and records ``dirsync``, at the moments the
unix VFS does: the first ``xSync`` through a handle that opened a journal or
a WAL with the CREATE flag (per handle: the connection that created the WAL
may not be the one that first syncs it), and an ``xDelete`` whose
``syncDir`` is set. So the model of ``powerloss.images`` holds of this VFS
by construction, not by belief in the unix VFS's internals.

The ``-shm`` file is never recorded: SQLite maps it into memory, never
writes it through the VFS, and rebuilds it from the WAL after a crash.
"""

from __future__ import annotations

import os
import sqlite3
from collections import namedtuple

import apsw

from crashcourse.store.rows import Row, as_sqlite, columns

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["VFS_NAME", "Event", "Recorder", "RecordingFile", "RecordingVFS",
    "Cursor", "Connection", "CREATE", "DELETE", "DIRSYNC", "MARK", "SYNC",
    "TRUNCATE", "WRITE"]

CREATE, WRITE, TRUNCATE, SYNC = "create", "write", "truncate", "sync"
DELETE, DIRSYNC, MARK = "delete", "dirsync", "mark"
VFS_NAME = "crashcourse-recording"
_CREATE = apsw.SQLITE_OPEN_CREATE
_JOURNALS = (apsw.SQLITE_OPEN_MAIN_JOURNAL | apsw.SQLITE_OPEN_SUPER_JOURNAL
             | apsw.SQLITE_OPEN_WAL)


class Event(namedtuple("_EventFields", "kind name offset data",
                       defaults=(0, b""))):
    """One thing a run asked of the disk, or a ``mark`` (chapter 11).

    ``name`` is the file's name inside the recorded folder (a ``mark``'s
    label); ``offset`` a write's offset or a truncation's size; ``data`` the
    bytes written (a ``mark``'s value)."""

    __slots__ = ()


class Recorder:
    """Every event of one run in one folder, in order, and the folder's
    files as they were when recording began (``base``); ``asked``, per file,
    the ``synchronous`` levels the code opened it with (chapter 11)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = os.path.realpath(folder)
        self.events: list[Event] = []
        self.base: dict[str, bytes] = {}
        self.asked: dict[str, set[str]] = {}  # file -> levels the code asked for

    def name(self, path: str | None) -> str | None:
        """A path's name in the folder; None for SQLite's nameless temp files.
        A file elsewhere is refused: the model covers one folder."""
        if path is None:
            return None
        path = os.path.realpath(path)
        if os.path.dirname(path) != self.folder:
            raise ValueError(f"{path} is outside the recorded folder {self.folder}")
        return os.path.basename(path)

    def add(self, kind: str, name: str | None, offset: int = 0,
            data: bytes = b"") -> None:
        if name is not None:
            self.events.append(Event(kind, name, offset, data))

    def mark(self, label: str, value: str) -> None:
        """Note that something happened now (``ack``: a commit returned)."""
        self.events.append(Event(MARK, label, 0, value))

    def marked(self, label: str, upto: int | None = None) -> list[str]:
        """The values marked ``label`` among the first ``upto`` events."""
        return [e.data for e in self.events[:upto]
                if e.kind == MARK and e.name == label]

    def sync_folder(self) -> None:
        """fsync the folder itself: every entry made or removed is durable."""
        fd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.add(DIRSYNC, ".")

    def take_base(self) -> None:
        """fsync every file in the folder and the folder, then keep their
        bytes: the durable starting point of every crash image."""
        for entry in sorted(os.listdir(self.folder)):
            path = os.path.join(self.folder, entry)
            if entry.endswith("-shm") or not os.path.isfile(path):
                continue
            with open(path, "rb+") as handle:
                os.fsync(handle.fileno())
                self.base[entry] = handle.read()
        self.sync_folder()
        self.events.clear()


class RecordingFile(apsw.VFSFile):
    """One open file: writes, truncations and syncs pass through, recorded
    (chapter 11)."""

    def __init__(self, recorder: Recorder, name, flags):
        path = name.filename() if isinstance(name, apsw.URIFilename) else name
        created = path is not None and not os.path.exists(path)
        super().__init__("", name, flags)  # "": the system's own VFS does the work
        self.recorder, self.name = recorder, recorder.name(path)
        # As the unix VFS: a journal or WAL opened with CREATE syncs the folder
        # at its first xSync, whichever connection's handle made the file.
        self.dir_pending = bool(flags[0] & _CREATE and flags[0] & _JOURNALS)
        if created:
            recorder.add(CREATE, self.name)

    def xWrite(self, data, offset: int) -> None:
        super().xWrite(data, offset)
        self.recorder.add(WRITE, self.name, offset, bytes(data))

    def xTruncate(self, size: int) -> None:
        super().xTruncate(size)
        self.recorder.add(TRUNCATE, self.name, size)

    def xSync(self, flags: int) -> None:
        super().xSync(flags)
        self.recorder.add(SYNC, self.name)
        if self.dir_pending and self.name is not None:
            self.dir_pending = False  # as SQLite does for a new journal
            self.recorder.sync_folder()


class RecordingVFS(apsw.VFS):
    """The system's VFS, with every durable-state change recorded (chapter 11).

    Registered under ``VFS_NAME`` while it lives; ``unregister()`` ends it."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder
        super().__init__(VFS_NAME, "")

    def xOpen(self, name, flags):
        return RecordingFile(self.recorder, name, flags)

    def xDelete(self, filename: str, syncdir: bool) -> None:
        super().xDelete(filename, syncdir)
        self.recorder.add(DELETE, self.recorder.name(filename))
        if syncdir:  # synchronous=EXTRA asks for this at a journal's unlink
            self.recorder.sync_folder()


class Cursor:
    """The rows of one statement, read at once (an open read statement would
    hold its transaction), with ``lastrowid`` and ``rowcount`` (chapter 11)."""

    def __init__(self, rows: list, lastrowid: int, rowcount: int):
        self.rows, self.lastrowid, self.rowcount = rows, lastrowid, rowcount

    def fetchone(self):
        return self.rows.pop(0) if self.rows else None

    def fetchall(self) -> list:
        rows, self.rows = self.rows, []
        return rows

    def __iter__(self):
        return iter(self.fetchall())


# apsw's exceptions as the sqlite3 ones the runtime's modules catch (any
# other apsw error: sqlite3.DatabaseError); apsw's own words say "locked".
_AS_SQLITE = ((apsw.ConstraintError, sqlite3.IntegrityError, ""),
              (apsw.BusyError, sqlite3.OperationalError, ""),
              (apsw.LockedError, sqlite3.OperationalError, ""),
              (apsw.SQLError, sqlite3.OperationalError, ""))


class Connection:
    """An apsw connection that the runtime's modules can use as if it were a
    ``sqlite3`` one: ``execute`` with named parameters, rows by name
    (``rows.Row``), sqlite3 exceptions (``rows.as_sqlite``; chapter 11).
    Autocommit, like ``store.connect``'s."""

    row_factory = None  # store.connect sets it; rows are always Row here

    def __init__(self, path: str, flags: int):
        self.apsw = apsw.Connection(str(path), flags=flags, vfs=VFS_NAME)

    def execute(self, sql: str, parameters=()) -> Cursor:
        try:
            cursor = self.apsw.execute(sql, parameters)
            try:
                names = columns(d[0] for d in cursor.get_description())
            except apsw.ExecutionCompleteError:  # no rows to describe
                names = {}
            found = [Row(names, values) for values in cursor]
        except apsw.Error as error:
            raise as_sqlite(error, _AS_SQLITE, sqlite3.DatabaseError) from error
        return Cursor(found, self.apsw.last_insert_rowid(), self.apsw.changes())

    def executemany(self, sql: str, sequence) -> None:
        for parameters in sequence:
            self.execute(sql, parameters)

    def close(self) -> None:
        self.apsw.close()
