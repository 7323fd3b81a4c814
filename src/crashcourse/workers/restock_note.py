"""The worker of chapters 00-01: post one restock note on the shop's board.

    python -m crashcourse.workers.restock_note --db PATH --task T --sku SKU \\
        --quantity N [--text TEXT] [--mode keyed|naive]

The shop keeps its own SQLite file. Posting a note writes a row on the restock
board AND raises the item's ``on_order`` count by the quantity. That second
write is a delta on purpose: applied twice, the numbers say so.

Registered boundaries, in order: ``before_apply`` (nothing written yet),
``inside_transaction`` (both writes made, the commit not yet run) and
``after_commit``. The parent may kill the worker at any of them.

``--mode keyed`` (the reference) goes through ``effects.apply_once`` with a key
derived from the task and the item, so a rerun of the same task finds its
ledger row. ``--mode naive`` is the draft of chapter 01: the same two writes in
one transaction, but with no identity, so a rerun posts the note again.

The worker prints one JSON line saying what it did; graders read the rows.
Exit status: 0 posted (or found posted); 2 bad input (a blank task or item, a
quantity that is not a whole number from 1 to 10**6, a ``--db`` with no
directory, or a ``--db`` that is not the shop's own store: 0 bytes, another
program's database, damaged or cut short, left as it was): one line on
stderr, no traceback, no file created or written; 4 the same
task already posted another note, nothing written (``CONFLICT_EXIT``); 5
held: another process kept the shop file's write lock past the busy timeout
(a holder paused mid-write, issue 35), the waiting transaction wrote nothing
and a rerun is safe (``HELD_EXIT``; one JSON line, ``held``); 74 the machine
refused a file mid-run (a full disk, a read-only mount): one line.
"""

from __future__ import annotations

import json
import sqlite3
import sys

from crashcourse import effects
from crashcourse.boundary import boundary
from crashcourse.store import (
    check_backend,
    ensure_schema,
    immediate,
    opened,
    table_rows,
    tables,
)
from crashcourse.validate import check_count, check_place, check_text
from crashcourse.workers import options
from crashcourse.workers.options import BAD_INPUT, OWN_FILE

RUNS_ON = OWN_FILE  # the databases install() accepts (store.check_backend)

TYPE_CHECKING = False  # typing itself costs every worker ~4 ms at start; hints only
if TYPE_CHECKING:  # only for hints
    from types import SimpleNamespace

CONFLICT_EXIT = 4  # same task, different note: refused, nothing written
HELD_EXIT = 5  # the shop file's lock kept by another process: nothing written
EXITS = {"applied": 0, "already_applied": 0, "bad_input": BAD_INPUT,
         "conflict": CONFLICT_EXIT, "held": HELD_EXIT}

SCHEMA = """
CREATE TABLE IF NOT EXISTS stock (
    sku      TEXT PRIMARY KEY,
    on_order INTEGER NOT NULL DEFAULT 0 CHECK (on_order >= 0)
);
CREATE TABLE IF NOT EXISTS restock_notes (
    note_id  INTEGER PRIMARY KEY,
    sku      TEXT NOT NULL,
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    text     TEXT NOT NULL
)
"""

TABLES = ("stock", "restock_notes", "effect_ledger")  # SCHEMA's and the ledger


def install(conn: sqlite3.Connection) -> None:
    """Create the shop's tables and its effect ledger (idempotent; chapter 00).

    A rerun finds them made: then this is one read, no write transaction."""
    check_backend(conn, RUNS_ON, __name__)
    if not set(TABLES) <= tables(conn):
        ensure_schema(conn, SCHEMA)
        effects.install(conn)


def check_note(sku: object, quantity: object, text: object) -> dict:
    """The note as a payload; a blank item, a non-positive or non-int quantity
    or a non-string text raises before anything is written (chapter 01)."""
    check_text("sku", sku)
    if check_count("quantity", quantity) == 0:
        raise ValueError("quantity must be positive")
    if not isinstance(text, str):
        raise TypeError("text must be a string")
    return {"sku": sku, "quantity": quantity, "text": text}


def note_key(task: str, sku: str) -> str:
    """One operation key per task and item, whatever the text says (chapter 01)."""
    return effects.operation_key(task, 1, "post_restock_note", {"sku": sku})


def write_note(conn: sqlite3.Connection, note: dict) -> dict:
    """Both writes of a note, inside the caller's transaction (chapter 00)."""
    cursor = conn.execute(
        "INSERT INTO restock_notes (sku, quantity, text)"
        " VALUES (:sku, :quantity, :text)",
        note,
    )
    # A delta: posting the same note twice orders the goods twice.
    conn.execute(
        "INSERT INTO stock (sku, on_order) VALUES (:sku, :quantity)"
        " ON CONFLICT (sku) DO UPDATE SET on_order = on_order + :quantity",
        note,
    )
    boundary("inside_transaction")
    return {"note_id": cursor.lastrowid}


def post_keyed(conn: sqlite3.Connection, task: str, note: dict) -> effects.Applied:
    """The reference: at most one note per (task, item) (chapter 01)."""
    return effects.apply_once(
        conn, note_key(task, note["sku"]), note, lambda c: write_note(c, note)
    )


def post_naive(conn: sqlite3.Connection, note: dict) -> effects.Applied:
    """The draft: one transaction, no identity; every run posts again."""
    with immediate(conn):
        result = write_note(conn, note)
    return effects.Applied("applied", result)


def snapshot(conn: sqlite3.Connection) -> dict:
    """Every durable row of the shop: notes, stock, effect ledger (chapter 00)."""
    return {
        "restock_notes": table_rows(conn, "restock_notes"),
        "stock": table_rows(conn, "stock"),
        "effect_ledger": table_rows(conn, "effect_ledger"),
    }


def check(args: SimpleNamespace) -> dict:
    """The note, once the whole command line is checked; ValueError or
    TypeError before the shop's file is opened (opening creates it) (ch. 00)."""
    check_place("--db", args.db)
    check_text("--task", args.task)
    return check_note(args.sku, args.quantity, args.text)


def run(conn: sqlite3.Connection, args: SimpleNamespace) -> dict:
    note = check_note(args.sku, args.quantity, args.text)
    install(conn)
    boundary("before_apply")
    try:
        if args.mode == "naive":
            done = post_naive(conn, note)
        else:
            done = post_keyed(conn, args.task, note)
    except effects.EffectConflict:
        return {"task": args.task, "status": "conflict"}
    boundary("after_commit")
    return {"task": args.task, "status": done.status, "result": done.result}


OPTIONS = (
    options.Option("--db", "the shop's SQLite file"),
    options.Option("--task", "the workflow's task id"),
    options.Option("--sku", "the item to restock"),
    options.Option("--quantity", "units, a whole number from 1 to 10**6",
                   type=options.whole_number),
    options.Option("--text", "the note's wording", default=""),
    options.Option("--mode", "keyed: the reference; naive: the chapter 01 draft",
                   choices=("keyed", "naive"), default="keyed"),
)


EPILOG = ("exit status: 0 posted (or found posted); 2 bad input (one line on "
          "stderr, no file created); 4 the task already posted another note; "
          "5 held: another process kept the shop file's write lock (nothing "
          "written); 74 the machine refused a file mid-run (one line)")


def parse(argv: list[str] | None = None) -> SimpleNamespace:
    """The worker's options; ``--help`` lists them (chapter 00)."""
    return options.parse(__doc__.split("\n\n")[0], OPTIONS, argv, EPILOG)


@options.one_line_errors(held=HELD_EXIT)
def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        check(args)
    except (TypeError, ValueError) as bad:
        return options.refuse(bad)
    with opened(args.db, own=TABLES) as conn:
        report = run(conn, args)
    print(json.dumps(report, sort_keys=True))
    return EXITS[report["status"]]


if __name__ == "__main__":
    sys.exit(main())
