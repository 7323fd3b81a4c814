"""A worker's OWN store, damaged or not its own, is refused before it is
trusted (issue 35): one line on stderr, exit status 2 (``options.BAD_INPUT``),
and the file left byte for byte as it was, so no second effect is made.

The damage is the kind a disk or a careless copy makes: one flipped bit in an
index (``PRAGMA quick_check`` passes, ``integrity_check`` does not: the lookup
by key then finds nothing and a worker that trusted it would post again), a
file cut short, a 0-byte file, another program's database. Each case is a real
child process; the evidence is the file's bytes and its rows."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from crashcourse import control
from crashcourse.services import payments
from crashcourse.store import StoreDamaged, StoreMissing, opened
from crashcourse.workers import options, restock_note

NOTE = ["--task", "t-1", "--sku", "oat-milk", "--quantity", "2", "--text", "low"]


def worker(module: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"crashcourse.workers.{module}",
                           *argv], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, cwd=cwd)


def posted(db: Path) -> subprocess.CompletedProcess:
    return worker("restock_note", ["--db", str(db), *NOTE], db.parent)


def flip_index_bit(db: Path, index: str, needle: bytes) -> None:
    """Flip the low bit of the last byte of ``needle`` where it is stored in
    ``index``'s root page (and nowhere else): the page stays well formed."""
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?",
                            (index,)).fetchone()[0]
    conn.close()
    data = bytearray(db.read_bytes())
    start = (root - 1) * page_size
    at = data.index(needle, start, start + page_size) + len(needle) - 1
    data[at] ^= 0x01
    db.write_bytes(bytes(data))


def quick_and_full(db: Path) -> tuple[str, str]:
    with sqlite3.connect(db) as conn:
        verdicts = (conn.execute("PRAGMA quick_check").fetchone()[0],
                    conn.execute("PRAGMA integrity_check").fetchone()[0])
    conn.close()
    return verdicts


def assert_refused(done: subprocess.CompletedProcess, module: str, db: Path,
                   before: bytes) -> str:
    lines = done.stderr.splitlines()
    assert done.returncode == options.BAD_INPUT, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"{module}.py: error: "), lines[0]
    assert db.read_bytes() == before  # nothing written
    return lines[0]


@pytest.fixture
def shop(tmp_path) -> Path:
    db = tmp_path / "shop.sqlite"
    done = posted(db)
    assert done.returncode == 0, done.stderr
    with opened(db) as conn:
        notes = restock_note.snapshot(conn)["restock_notes"]
    assert [note["quantity"] for note in notes] == [2]
    return db


def test_a_flipped_bit_in_the_ledger_index_posts_no_second_note(shop):
    key = restock_note.note_key("t-1", "oat-milk").encode()
    flip_index_bit(shop, "sqlite_autoindex_effect_ledger_1", key)
    quick, full = quick_and_full(shop)
    assert quick == "ok" and full != "ok"  # the damage only the full check sees
    before = shop.read_bytes()
    line = assert_refused(posted(shop), "restock_note", shop, before)
    assert "damaged" in line
    with sqlite3.connect(shop) as conn:  # read past the damage: still one note
        assert conn.execute("SELECT count(*) FROM restock_notes").fetchone()[0] == 1
    conn.close()


def test_a_shop_file_cut_short_posts_no_second_note(shop):
    data = shop.read_bytes()
    shop.write_bytes(data[:-1000])
    before = shop.read_bytes()
    line = assert_refused(posted(shop), "restock_note", shop, before)
    assert "damaged" in line or "not a store" in line


@pytest.mark.parametrize("content", [b"", b"not a database at all\n" * 50],
                         ids=["empty", "text"])
def test_an_empty_or_non_database_file_is_refused_not_replaced(tmp_path, content):
    db = tmp_path / "shop.sqlite"
    db.write_bytes(content)
    assert_refused(posted(db), "restock_note", db, content)


def test_another_program_s_database_is_refused_not_written(tmp_path):
    service = tmp_path / "payments.sqlite"
    payments.install(service)
    before = service.read_bytes()
    line = assert_refused(posted(service), "restock_note", service, before)
    assert "not this program's store" in line


def test_the_refusals_come_from_the_one_opener(tmp_path):
    """The check lives in ``store.connect``'s ``own=``: every caller gets it."""
    db = tmp_path / "own.sqlite"
    db.write_bytes(b"")
    with pytest.raises(StoreMissing, match="0 bytes"):
        opened(db, own=("t",)).__enter__()
    db.unlink()
    with opened(db, own=("t",)) as conn:  # no file: created, as before
        conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)",
                         [(f"key-{i:04d}", "v") for i in range(50)])
    flip_index_bit(db, "sqlite_autoindex_t_1", b"key-0007")
    with pytest.raises(StoreDamaged):
        opened(db, own=("t",)).__enter__()


def test_a_scheduler_on_a_damaged_state_starts_nothing(tmp_path):
    state = tmp_path / "state.sqlite"
    with opened(state) as conn:
        control.install(conn)
    state.write_bytes(state.read_bytes()[:-1000] if state.stat().st_size > 2000
                      else b"\x00" * 100)
    before = state.read_bytes()
    done = worker("scheduler", ["--state", str(state), "--name", "n",
                                "--ticks", "1", "--interval", "0"], tmp_path)
    assert_refused(done, "scheduler", state, before)


def journal_world(tmp_path) -> tuple[str, str]:
    """A journal world whose plan has run to its end once: the directory and
    the task. A rerun of the same command does nothing (``skip``)."""
    from crashcourse.lab import pauses

    task = pauses.build(str(tmp_path), pauses.pause_plan(renames=2, mails=1))
    done = journal_run(tmp_path, task)
    assert done.returncode == 0, f"the first run did not finish: {done.stderr}"
    return str(tmp_path), task


def journal_run(tmp_path, task: str) -> subprocess.CompletedProcess:
    return worker("journal_worker", ["--dir", str(tmp_path), "--task", task],
                  tmp_path)


@pytest.mark.parametrize("index", ["sqlite_autoindex_work_2", "work_in_session"])
def test_a_flipped_bit_in_the_journal_s_own_index_is_refused(tmp_path, index):
    """Issue 35: ``journal_worker`` gave its own file the quick check, which a
    flipped bit in an index passes. With the work row's index damaged, the
    rerun queued the task again and died on it (74, "IntegrityError"), or
    claimed and judged a file SQLite itself calls damaged (exit 0). The full
    integrity check refuses it: exit 2, one line, the file as it was."""
    directory, task = journal_world(tmp_path)
    journal_file = Path(directory) / "journal.sqlite"
    flip_index_bit(journal_file, index, task.encode()[:20])
    quick, full = quick_and_full(journal_file)
    assert (quick, full != "ok") == ("ok", True), (
        f"the damage is not the kind only the full check finds: {quick}, {full}")
    before = journal_file.read_bytes()
    done = journal_run(tmp_path, task)
    assert done.returncode == options.BAD_INPUT, (
        f"a damaged journal was trusted: exit {done.returncode}, {done.stderr}")
    assert len(done.stderr.splitlines()) == 1 and "damaged" in done.stderr, (
        f"the refusal is not one line naming the damage: {done.stderr}")
    assert journal_file.read_bytes() == before, "the damaged journal was written"


@pytest.mark.parametrize("index", ["sqlite_autoindex_work_1",
                                   "sqlite_autoindex_claims_1"])
def test_a_flipped_bit_in_the_shop_worker_s_own_index_is_refused(tmp_path, index):
    """Issue 35: ``shop_worker`` gave the agent's file the quick check, which a
    flipped bit in the work row's or the claims' index passes: a drain then
    claimed and finished on a file SQLite itself calls damaged (exit 0,
    written). The full integrity check refuses it: exit 2, one line, the file
    as it was."""
    from crashcourse import claims
    from crashcourse.claims import orders

    db = tmp_path / "agent.sqlite"
    with opened(db) as conn:
        orders.install(conn)
        first = claims.enqueue(conn, "phone:item-0", "counter", "Restock 0")
        claims.enqueue(conn, "phone:item-1", "counter", "Restock 1")
    drain = ["drain", "--db", str(db), "--limit", "1"]
    done = worker("shop_worker", drain, tmp_path)
    assert done.returncode == 0, f"the first drain did not finish: {done.stderr}"
    flip_index_bit(db, index, first.encode())
    quick, full = quick_and_full(db)
    assert (quick, full != "ok") == ("ok", True), (
        f"the damage is not the kind only the full check finds: {quick}, {full}")
    before = db.read_bytes()
    again = worker("shop_worker", drain, tmp_path)
    assert again.returncode == options.BAD_INPUT, (
        f"a damaged agent file was trusted: exit {again.returncode}, {again.stdout}")
    assert len(again.stderr.splitlines()) == 1 and "damaged" in again.stderr, (
        f"the refusal is not one line naming the damage: {again.stderr}")
    assert db.read_bytes() == before, "the damaged file was written"
