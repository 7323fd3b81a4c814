"""The adapter's journal connection: kept per process, thread and file
(issue 34), and never trusted past the file it opened.

Each test fails when its rule is broken by hand in
``crashcourse.adapters.journal_connection``: open per call again (the count
of opens), drop the file check (the second call's row lands in a deleted
file and the new journal misses it), skip the rollback (a later writer finds
the lock taken), share one connection between threads (sqlite3 refuses it),
or check the probe's answer at every call (the probe count).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from crashcourse import adapters, journal
from crashcourse.adapters import EffectTool
from crashcourse.store import write_lock_free


def tool(path: Path, done: list, probes: list | None = None) -> EffectTool:
    """A tool whose effect is a list append, keyed; its probe looks there."""

    def body(item: str, operation_key: str) -> dict:
        done.append(operation_key)
        return {"item": item}

    def probe(item: str, operation_key: str):
        if probes is not None:
            probes.append(operation_key)
        return operation_key in done, None

    return EffectTool(body, probe, journal_path=str(path), task="restock-0042")


@pytest.fixture
def opens(monkeypatch) -> list:
    """Every journal connection the adapter opens, by path."""
    seen = []
    real = adapters.connect

    def counted(path, **options):
        seen.append(path)
        return real(path, **options)

    monkeypatch.setattr(adapters, "connect", counted)
    return seen


def journal_rows(path: Path) -> list[dict]:
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute("SELECT * FROM journal")]


def test_calls_after_the_first_open_nothing(tmp_path, opens):
    path, done = tmp_path / "effects.sqlite", []
    calls = tool(path, done)
    for item in ("flour", "salt", "yeast"):
        calls(item=item)
    assert len(done) == 3, f"each new action runs once: {done}"
    assert opens == [str(path)], (
        "three calls opened the journal more than once: the connection is not"
        f" kept ({opens})")


def test_a_journal_replaced_between_calls_is_reopened(tmp_path, opens):
    path, done = tmp_path / "effects.sqlite", []
    calls = tool(path, done)
    calls(item="flour")
    for leftover in tmp_path.glob("effects.sqlite*"):
        leftover.unlink()  # a reset: the old file is gone, a new one comes
    calls(item="salt")
    rows = journal_rows(path)
    assert [r["outcome"] for r in rows] == ['{"item": "salt"}'], (
        "the call after the journal was replaced is not in the new file: it was"
        f" written through the connection to the deleted one ({rows})")
    assert len(opens) == 2, f"the replaced journal was not opened again: {opens}"


def test_a_failed_call_leaves_the_write_lock_free(tmp_path, monkeypatch):
    path, done = tmp_path / "effects.sqlite", []
    calls = tool(path, done)
    calls(item="flour")  # the connection is open and kept now

    def breaks_mid_transaction(conn, *args, **kwargs):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE journal SET outcome = outcome")
        raise RuntimeError("the journal broke inside its transaction")

    monkeypatch.setattr(journal, "run_task", breaks_mid_transaction)
    with pytest.raises(RuntimeError):
        calls(item="salt")
    assert write_lock_free(str(path)), (
        "a call that failed inside a transaction kept the journal's write lock:"
        " every other writer waits for it")


def test_each_thread_calls_through_its_own_connection(tmp_path, opens):
    path, done = tmp_path / "effects.sqlite", []
    calls, errors = tool(path, done), []
    calls(item="flour")

    def in_thread(item):
        try:
            calls(item=item)
        except Exception as error:  # noqa: BLE001 - the test reports it below
            errors.append(error)

    thread = threading.Thread(target=in_thread, args=("salt",))
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the call in a second thread did not end in 60 s"
    assert errors == [], (
        "a call in a second thread failed: it used another thread's"
        f" connection: {errors}")
    assert len(opens) == 2, f"two threads, {len(opens)} journal opens: {opens}"


def test_the_probes_answer_is_checked_before_the_first_claim_only(tmp_path):
    path, done, probes = tmp_path / "effects.sqlite", [], []
    calls = tool(path, done, probes)
    calls(item="flour")
    calls(item="salt")
    calls(item="yeast")
    # The journal asks the probe once per new step (what it saw before goes
    # in the intent: chapter 07); the adapter's check of the answer's shape
    # adds one more, before the tool's first claim, and no other.
    assert len(probes) == 3 + 1, (
        "the probe's shape is checked again after the first call: a service"
        f" round trip more per call ({len(probes)} probes for 3 calls)")
