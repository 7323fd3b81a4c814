"""The drive: files with stable ids that the plan renames (chapter 07).

A file keeps its id for life; its name is just a property. The only change the
shop assistant asks of the drive is an END STATE, ``rename_to(file, name)``:
"file F is called X". Asking twice changes nothing the second time, so a
repeated request is harmless, but the drive still logs every request it gets
(``rename_requests``): the campaign counts duplicates from that log, never from
the worker's memory.

A request may carry the step's operation key (``operation_key=``): the drive
then binds the key to the request, and a later request under the same key is
a REPLAY: no new row and no change, only the first row's ``replays`` count
goes up, so a late request from a paused holder shows in the drive's own rows
as what it was. The same key for another file or name is refused
(``RenameConflict``, chapter 01's rule). A replay is history, not a new
effect: it is answered before the credential is judged (chapter 03's order).

Like every service, the drive is called by its address, the path of its file:
each call opens it, does its work (writes in one ``BEGIN IMMEDIATE``) and
closes it. Only ``install`` creates the file; every other call refuses a file
that is missing, empty or not installed (``store.StoreMissing``), so a lost
drive never reads as a drive without files (issue 14).

A rename may also be a COMPARE-AND-SET (``expect=``, chapter 09's unwind):
only if the file is called ``expect`` now, read inside the rename's own
transaction; else ``NameChanged`` and nothing is written. An unwind puts a
file back only while it still has the name the run gave it, so a rename
someone else made since is never overwritten.

Two probes answer "did the rename happen?":

* ``probe_rename`` looks the file up BY ID: is file F called X now?
* ``probe_rename_by_name`` is the deliberately wrong one kept for the campaign:
  it asks "is ANY file called X?", so a file someone else gave that name
  looks like proof that our rename happened.

Installed with ``broker=PATH`` (chapter 09), the drive is GUARDED: a rename
must present a credential for ``drive:rename`` that the broker accepts inside
the rename's own transaction, under the broker's lock
(``broker.guarded_write``), or nothing is written and the refusal is logged in
the drive's ``refusals``. Every request row carries the credential it used,
when the broker judged it (``verified_at``) and its commit stamp
(``committed_at``, taken just before the commit).
"""

from __future__ import annotations

import sqlite3

from crashcourse.effects import EffectConflict
from crashcourse.services.broker import (
    CredentialRefused,
    guard,
    guarded_write,
    note_refusal,
    refusals,
)
from crashcourse.store import (
    DEFAULT_BUSY_TIMEOUT_MS,
    ensure_schema,
    immediate,
    opened,
    table_rows,
)
from crashcourse.validate import clock

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:  # only for hints: workers start faster without pathlib
    from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    file_id TEXT PRIMARY KEY,          -- stable: never changes, never reused
    name    TEXT NOT NULL,             -- names may repeat, as on real drives
    owner   TEXT NOT NULL DEFAULT 'shop'
);
CREATE TABLE IF NOT EXISTS rename_requests (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id       TEXT NOT NULL REFERENCES files (file_id),
    name          TEXT NOT NULL,
    was           TEXT NOT NULL,       -- the name it had before this request
    requester     TEXT NOT NULL,       -- 'assistant' or someone else
    changed       INTEGER NOT NULL,    -- 0 when the file already had the name
    operation_key TEXT UNIQUE,         -- the step's key, when it sent one
    replays       INTEGER NOT NULL DEFAULT 0,  -- later requests under that key
    credential    TEXT,                -- what it presented (chapter 09)
    verified_at   REAL,                -- when the broker judged it (chapter 09)
    committed_at  REAL NOT NULL        -- stamped just before its commit
)
"""
RENAME = "drive:rename"  # the scope a guarded drive asks of a credential
TABLES = ("files", "rename_requests")  # an installed drive (opened's require)


class UnknownFile(LookupError):
    """No file with that id exists on the drive (chapter 07)."""


class RenameConflict(EffectConflict):
    """The operation key was already used for another file or name (ch. 07)."""


class NameChanged(RuntimeError):
    """A compare-and-set rename found the file under another name (chapter
    09); ``expected`` and ``found`` say which. Nothing was written."""

    def __init__(self, file_id: str, expected: str, found: str):
        super().__init__(f"{file_id} is called {found!r}, not {expected!r}:"
                         " left as it is")
        self.file_id, self.expected, self.found = file_id, expected, found


def install(path: str | Path, files: dict[str, str] | None = None,
            owner: str = "shop", *, broker: str | Path | None = None) -> None:
    """Create the drive's tables and add ``files`` ({file_id: name}) (chapter 07).

    With ``broker`` every later rename needs its credential (chapter 09)."""
    with opened(path, record=True) as conn:
        ensure_schema(conn, SCHEMA)
        guard(conn, broker)
        with immediate(conn):
            for file_id, name in (files or {}).items():
                conn.execute(
                    "INSERT INTO files (file_id, name, owner)"
                    " VALUES (:file_id, :name, :owner)",
                    {"file_id": file_id, "name": name, "owner": owner},
                )


def _lookup(conn: sqlite3.Connection, file_id: str) -> dict:
    row = conn.execute(
        "SELECT file_id, name FROM files WHERE file_id = :file_id",
        {"file_id": file_id},
    ).fetchone()
    if row is None:
        raise UnknownFile(file_id)
    return dict(row)


def lookup(path: str | Path, file_id: str) -> dict:
    """The file's current id and name, or ``UnknownFile`` (chapter 07)."""
    with opened(path, require=TABLES, record=True) as conn:
        return _lookup(conn, file_id)


def rename_to(path: str | Path, file_id: str, name: str,
              requester: str = "assistant", *, credential: str | None = None,
              operation_key: str | None = None, expect: str | None = None,
              busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> dict:
    """Make file ``file_id`` be called ``name`` (an end state) (chapter 07).

    Under an ``operation_key`` already recorded: a replay, nothing changed,
    ``"replayed": True`` (another file or name under it: ``RenameConflict``).
    A guarded drive then checks ``credential``, under the broker's lock, in
    the same transaction (chapter 09): refused, nothing is renamed and
    ``CredentialRefused`` says why. With ``expect``, only if the file is
    called ``expect`` now, in the same transaction: else ``NameChanged``,
    nothing written (chapter 09). ``busy_timeout_ms`` bounds the wait for
    the drive's lock (and a guarded drive's broker), so a caller that
    declared how long its request may take keeps to it (chapter 07).
    """
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise ValueError(f"not a file name: {name!r}")
    if operation_key is not None and (not isinstance(operation_key, str)
                                      or not operation_key.strip()):
        raise ValueError(f"not an operation key: {operation_key!r}")
    try:
        with guarded_write(path, TABLES, credential, RENAME,
                           busy_timeout_ms=busy_timeout_ms) as (conn, admit):
            if operation_key is not None:
                replayed = _replay(conn, operation_key, file_id, name)
                if replayed is not None:
                    return replayed
            verified_at = admit()
            before = _lookup(conn, file_id)
            if expect is not None and before["name"] != expect:
                raise NameChanged(file_id, expect, before["name"])  # rolls back
            conn.execute(
                "UPDATE files SET name = :name WHERE file_id = :file_id",
                {"file_id": file_id, "name": name},
            )
            conn.execute(
                "INSERT INTO rename_requests (file_id, name, was, requester,"
                " changed, operation_key, credential, verified_at, committed_at)"
                " VALUES (:file_id, :name, :was, :requester, :changed,"
                " :operation_key, :credential, :verified_at, :committed_at)",
                {"file_id": file_id, "name": name, "was": before["name"],
                 "requester": requester, "changed": int(before["name"] != name),
                 "operation_key": operation_key, "credential": credential,
                 "verified_at": verified_at,
                 "committed_at": clock(None)},  # last: the commit follows
            )
    except CredentialRefused as refused:
        note_refusal(path, "rename", credential, refused.reason)
        raise
    return {"file_id": file_id, "name": name, "was": before["name"]}


def _replay(conn: sqlite3.Connection, operation_key: str, file_id: str,
            name: str) -> dict | None:
    """The first request under ``operation_key``, counted once more, or None."""
    row = conn.execute(
        "SELECT file_id, name, was FROM rename_requests"
        " WHERE operation_key = :operation_key", {"operation_key": operation_key},
    ).fetchone()
    if row is None:
        return None
    if (row["file_id"], row["name"]) != (file_id, name):
        raise RenameConflict(operation_key, {"file_id": row["file_id"],
                                             "name": row["name"]},
                             {"file_id": file_id, "name": name})
    conn.execute("UPDATE rename_requests SET replays = replays + 1"
                 " WHERE operation_key = :operation_key",
                 {"operation_key": operation_key})
    return {**dict(row), "replayed": True}


def probe_rename(path: str | Path, file_id: str, name: str) -> tuple[bool, dict]:
    """Ask the drive by id: is file ``file_id`` called ``name``? (chapter 07)

    Returns ``(done, observed)``; ``observed`` is the file as it is now, which
    the journal also keeps as the step's ``before_state``.
    """
    observed = lookup(path, file_id)
    return observed["name"] == name, observed


def probe_rename_by_name(path: str | Path, file_id: str,
                         name: str) -> tuple[bool, dict]:
    """The WRONG probe (chapter 07): any file called ``name`` counts as done."""
    with opened(path, require=TABLES, record=True) as conn:
        row = conn.execute(
            "SELECT file_id, name FROM files WHERE name = :name ORDER BY file_id",
            {"name": name},
        ).fetchone()
        if row is None:
            return False, _lookup(conn, file_id)
        return True, dict(row)


def names(path: str | Path, owner: str | None = "shop") -> dict[str, str]:
    """{file_id: name} of every file of ``owner`` (None: all) (chapter 07)."""
    with opened(path, require=TABLES, record=True) as conn:
        rows = conn.execute(
            "SELECT file_id, name FROM files"
            " WHERE :owner IS NULL OR owner = :owner ORDER BY file_id",
            {"owner": owner},
        ).fetchall()
    return {row["file_id"]: row["name"] for row in rows}


def duplicate_requests(path: str | Path, requester: str = "assistant") -> int:
    """Requests beyond the first per (file, name), from the log (chapter 07)."""
    with opened(path, require=TABLES, record=True) as conn:
        return conn.execute(
            "SELECT coalesce(sum(n - 1), 0) FROM ("
            "  SELECT count(*) AS n FROM rename_requests"
            "  WHERE requester = :requester GROUP BY file_id, name)",
            {"requester": requester},
        ).fetchone()[0]


def snapshot(path: str | Path) -> dict[str, list[dict]]:
    """Every file, rename request and refusal, for evidence (chapter 09)."""
    with opened(path, require=TABLES, record=True) as conn:
        return {"files": table_rows(conn, "files", "file_id"),
                "rename_requests": table_rows(conn, "rename_requests", "seq"),
                "refusals": refusals(conn)}
