"""Grades exercise 06.2 (unfenced_quote.py): a stale holder's quote."""

import re
import sqlite3

import pytest

from crashcourse import claims, fence
from crashcourse.store import connect, opened

T0 = 1_700_000_000.0  # in the past: the real clock is later
WRITES_QUOTES = re.compile(r"\s*(INSERT|UPDATE|REPLACE)\b.*?\bquotes\b",
                           re.IGNORECASE | re.DOTALL)


@pytest.fixture
def mod(answer):
    return answer("ch06", "unfenced_quote")


@pytest.fixture
def replaced(tmp_path, mod):
    """worker-a's lease ran out long ago; worker-b holds the work now."""
    with opened(tmp_path / "shop.db") as conn:
        mod.install(conn)
        claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
        old = claims.claim(conn, "worker-a", ttl=1, now=T0)
        new = claims.claim(conn, "worker-b", ttl=3600)
        yield conn, old, new


def quotes(conn):
    return [tuple(r) for r in conn.execute(
        "SELECT sku, unit_cents, generation FROM quotes ORDER BY sku")]


def refusals(conn):
    return [tuple(r) for r in conn.execute(
        "SELECT generation, action, reason FROM refusals ORDER BY seq")]


def test_without_the_fence_the_stale_quote_replaces_the_current_one(mod, replaced):
    conn, old, new = replaced
    mod.record_quote_unfenced(conn, new, "flour-25kg", 2150)
    mod.record_quote_unfenced(conn, old, "flour-25kg", 1990)  # A's late answer
    with pytest.raises(fence.StaleClaim):
        fence.finish(conn, old, "DONE", "ordered at 1990")
    assert quotes(conn) == [("flour-25kg", 1990, 1)]  # the current quote is gone


def test_the_restored_fence_keeps_the_current_quote(mod, replaced):
    conn, old, new = replaced
    mod.record_quote(conn, new, "flour-25kg", 2150)
    with pytest.raises(fence.StaleClaim) as refused:
        mod.record_quote(conn, old, "flour-25kg", 1990)
    assert refused.value.reason == "superseded"
    assert quotes(conn) == [("flour-25kg", 2150, 2)]
    assert refusals(conn) == [(1, "quote", "superseded")]
    assert not conn.in_transaction


def test_a_stale_holder_cannot_add_a_quote_either(mod, replaced):
    conn, old, _ = replaced
    with pytest.raises(fence.StaleClaim):
        mod.record_quote(conn, old, "rye-10kg", 1800)
    assert quotes(conn) == []


def test_the_current_holder_replaces_its_own_quote(mod, replaced):
    conn, _, new = replaced
    mod.record_quote(conn, new, "flour-25kg", 2150)
    mod.record_quote(conn, new, "flour-25kg", 2090)  # the supplier's new price
    mod.record_quote(conn, new, "rye-10kg", 1800)
    assert quotes(conn) == [("flour-25kg", 2090, 2), ("rye-10kg", 1800, 2)]
    assert refusals(conn) == []


def test_no_replacement_fits_between_the_check_and_the_write(mod, replaced,
                                                            tmp_path):
    """Just before the quote is written, a replacement tries to claim the work
    from another connection. Under the fence's write lock it cannot (it gives
    up after a short wait); if the check already let go of the lock, it takes
    over and the quote must not carry the superseded generation."""
    conn, _, current = replaced
    attempts = []

    def replacement_tries_to_claim(sql: str) -> None:
        if attempts or not WRITES_QUOTES.match(sql):
            return
        rival = connect(tmp_path / "shop.db", busy_timeout_ms=200)
        try:
            attempts.append(claims.claim(rival, "worker-c", ttl=60,
                                         now=current.expires + 1, work_id=current.id))
        except sqlite3.OperationalError:  # locked: the fenced write holds the lock
            attempts.append(None)
        finally:
            rival.close()

    conn.set_trace_callback(replacement_tries_to_claim)
    try:
        mod.record_quote(conn, current, "flour-25kg", 2150)
    except fence.StaleClaim:
        pass  # refused: the rows are checked below either way
    finally:
        conn.set_trace_callback(None)
    assert len(attempts) == 1  # the quote was about to be written once
    if attempts[0] is not None:  # the replacement got in before the write
        assert quotes(conn) == []
