"""Grades exercise 06.2 (unfenced_quote.py): a stale holder's quote."""

import sqlite3

import pytest

from crashcourse import claims, control, store
from crashcourse.claims import fence
from crashcourse.store import connect, opened
from crashcourse.waiting import wait_until

T0 = 1_700_000_000.0  # in the past: the real clock is later


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
        pytest.fail("the grader's world, not your answer: the superseded holder's"
                    " finish was to be refused with StaleClaim")
    kept = quotes(conn)
    assert kept == [("flour-25kg", 1990, 1)], (  # the current quote is gone
        "record_quote_unfenced must keep the chapter's bug: the stale holder's"
        " late quote replaces the current one, unchecked; quotes are"
        f" {kept}, not [('flour-25kg', 1990, 1)]")


def test_the_restored_fence_keeps_the_current_quote(mod, replaced):
    conn, old, new = replaced
    mod.record_quote(conn, new, "flour-25kg", 2150)
    with pytest.raises(fence.StaleClaim) as refused:
        said = mod.record_quote(conn, old, "flour-25kg", 1990)
        pytest.fail("the stale holder's quote was not refused with StaleClaim (a"
                    f" newer claim took the work): record_quote answered {said!r}")
    assert refused.value.reason == "superseded", (
        "the stale holder was refused for the wrong reason: a newer claim took"
        f" the work, so 'superseded', not {refused.value.reason!r}")
    kept = quotes(conn)
    assert kept == [("flour-25kg", 2150, 2)], (
        "the stale holder's quote replaced the current holder's: the fence"
        f" must check the claim before writing; quotes are {kept}")
    kept = refusals(conn)
    assert kept == [(1, "quote", "superseded")], (
        "the refusal is not on record with the stale generation, the action"
        f" and the reason: refusals are {kept}")
    assert not conn.in_transaction, (
        "the refusal was raised with a transaction left open")


def test_a_stale_holder_cannot_add_a_quote_either(mod, replaced):
    conn, old, _ = replaced
    with pytest.raises(fence.StaleClaim):
        said = mod.record_quote(conn, old, "rye-10kg", 1800)
        pytest.fail("a stale holder adding a quote where there was none was not"
                    f" refused with StaleClaim: record_quote answered {said!r}")
    kept = quotes(conn)
    assert kept == [], (
        "a stale holder added a quote where there was none: the fence must"
        f" guard every write, not only a replacement; quotes are {kept}")


def test_the_current_holder_replaces_its_own_quote(mod, replaced):
    conn, _, new = replaced
    mod.record_quote(conn, new, "flour-25kg", 2150)
    mod.record_quote(conn, new, "flour-25kg", 2090)  # the supplier's new price
    mod.record_quote(conn, new, "rye-10kg", 1800)
    kept = quotes(conn)
    assert kept == [("flour-25kg", 2090, 2), ("rye-10kg", 1800, 2)], (
        "the current holder could not replace its own quote (the first quote"
        " must not win for good) or add another, under its generation; quotes"
        f" are {kept}")
    kept = refusals(conn)
    assert kept == [], f"the current holder's quotes were refused: {kept}"


# --- a holder that stopped being current, each way it can -------------------


def superseded(conn, claim):
    conn.execute("UPDATE work SET expires = :past WHERE id = :id",
                 {"past": T0, "id": claim.id})
    claims.claim(conn, "worker-c", ttl=3600, work_id=claim.id)


def lapsed(conn, claim):  # the lease ran out; nobody came after it
    conn.execute("UPDATE work SET expires = :past WHERE id = :id",
                 {"past": T0, "id": claim.id})


def finished(conn, claim):
    fence.finish(conn, claim, claims.DONE, "ordered")


def cancelled(conn, claim):
    fence.cancel(conn, claim.id)


def paused(conn, claim):
    control.set_paused(conn, True)


@pytest.mark.parametrize("stale", [superseded, lapsed, finished, cancelled, paused],
                         ids=lambda f: f.__name__)
def test_a_holder_that_stopped_being_current_changes_no_quote(mod, replaced, stale):
    conn, _, current = replaced
    mod.record_quote(conn, current, "flour-25kg", 2150)
    stale(conn, current)
    with pytest.raises(fence.StaleClaim):
        said = mod.record_quote(conn, current, "flour-25kg", 1990)
        pytest.fail(f"a holder that stopped being current ({stale.__name__}) was not"
                    " refused with StaleClaim when it replaced its quote:"
                    f" record_quote answered {said!r}")
    with pytest.raises(fence.StaleClaim):
        said = mod.record_quote(conn, current, "rye-10kg", 1800)
        pytest.fail(f"a holder that stopped being current ({stale.__name__}) was not"
                    " refused with StaleClaim when it added a quote: record_quote"
                    f" answered {said!r}")
    kept = quotes(conn)
    assert kept == [("flour-25kg", 2150, 2)], (
        f"a holder that stopped being current ({stale.__name__}) changed a"
        " quote: the fence must check the work row's status, owner, lease and"
        f" the pause, not only the generation; quotes are {kept}")
    kept = [(g, action) for g, action, _ in refusals(conn)]
    assert kept == [(2, "quote")] * 2, (
        f"the two refused quotes ({stale.__name__}) are not on record under the"
        f" holder's generation: refusals are {kept}")


# --- a lease that runs out on the real clock --------------------------------


@pytest.fixture
def short_lease(tmp_path, mod):
    """worker-b holds the work on a one-second lease and its quote is stored
    (written here, not by your code); then it is paused (a slow model turn, a
    debugger) and the test waits until that lease is over by the store's
    clock. Nothing touches the row."""
    with opened(tmp_path / "shop.db") as conn:
        mod.install(conn)
        claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
        holder = claims.claim(conn, "worker-b", ttl=1)
        conn.execute("INSERT INTO quotes (work_id, sku, unit_cents, generation)"
                     " VALUES (:id, 'flour-25kg', 2150, 1)", {"id": holder.id})
        wait_until(lambda: store.now(conn) > holder.expires, timeout=30,
                   what="worker-b's lease run out")
        yield conn, holder


def test_a_holder_whose_lease_ran_out_on_the_clock_changes_no_quote(mod, short_lease):
    """The paused holder resumes with its lease over and its row as it left
    it (nobody rewrote ``expires``, nobody claimed after it): its quote is
    refused. A fence judged at an instant of the answer's choosing
    (``now=claim.expires - 1``, the chapter's way of showing the rule without
    waiting) still finds it inside its lease, forever."""
    conn, holder = short_lease
    row = claims.work_row(conn, holder.id)
    assert (row["generation"], row["expires"]) == (1, holder.expires), (
        "the grader's world, not your answer: the work row was to stay as the"
        f" holder left it, and it is generation {row['generation']}, expires"
        f" {row['expires']}")
    with pytest.raises(fence.StaleClaim) as refused:
        said = mod.record_quote(conn, holder, "flour-25kg", 1990)
        pytest.fail("the holder whose lease ran out on the store's clock was not"
                    f" refused with StaleClaim: record_quote answered {said!r}")
    assert refused.value.reason == "lease expired", (
        "the holder whose lease ran out was refused for the wrong reason:"
        f" 'lease expired', not {refused.value.reason!r}")
    kept = quotes(conn)
    assert kept == [("flour-25kg", 2150, 1)], (
        "the holder whose lease ran out on the clock changed its quote: the"
        " lease must be judged on the store's clock now, not at an instant"
        f" inside the lease; quotes are {kept}")
    kept = refusals(conn)
    assert kept == [(1, "quote", "lease expired")], (
        f"the refusal for the expired lease is not on record: refusals are {kept}")


def test_a_replacement_on_the_real_clock_keeps_its_quote(mod, short_lease):
    """Once the lease is over a replacement claims the work on the real clock
    and quotes; the resumed holder's late quote must not replace it."""
    conn, holder = short_lease
    replacement = claims.claim(conn, "worker-c", ttl=3600, work_id=holder.id)
    assert replacement is not None and replacement.generation == 2, (
        "the grader's world, not your answer: the replacement was to claim the"
        f" work at generation 2, and got {replacement!r}")
    mod.record_quote(conn, replacement, "flour-25kg", 2090)
    with pytest.raises(fence.StaleClaim):
        said = mod.record_quote(conn, holder, "flour-25kg", 1990)
        pytest.fail("the resumed holder's late quote, after a replacement claimed the"
                    " work, was not refused with StaleClaim: record_quote answered"
                    f" {said!r}")
    kept = quotes(conn)
    assert kept == [("flour-25kg", 2090, 2)], (
        "the resumed holder's late quote replaced the replacement's: quotes"
        f" are {kept}, not [('flour-25kg', 2090, 2)]")


# --- a replacement's claim before every statement of the write --------------


def writes_of(mod, tmp_path) -> int:
    """How many statements the current holder's quote runs."""
    with opened(tmp_path / "probe.db") as conn:
        mod.install(conn)
        claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
        current = claims.claim(conn, "worker-b", ttl=3600)
        seen = []
        conn.set_trace_callback(seen.append)
        mod.record_quote(conn, current, "flour-25kg", 2150)
        conn.set_trace_callback(None)
    return len(seen)


def quote_with_a_rival_at(mod, path, boundary: int) -> dict:
    """The current holder writes its quote; just before its ``boundary``-th
    statement a replacement tries to claim the work from another connection
    (a lapsed lease by the replacement's clock). Under the fence's write lock
    it cannot (it gives up after a short wait); otherwise it takes over."""
    with opened(path) as conn:
        mod.install(conn)
        claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
        current = claims.claim(conn, "worker-b", ttl=3600)
        ran = {"count": 0, "replaced": None}

        def before(sql: str) -> None:
            ran["count"] += 1
            if ran["count"] != boundary:
                return
            rival = connect(path, busy_timeout_ms=50)
            try:
                ran["replaced"] = claims.claim(rival, "worker-c", ttl=60,
                                               now=current.expires + 1,
                                               work_id=current.id)
            except sqlite3.OperationalError:  # locked: the fenced write holds it
                ran["replaced"] = None
            finally:
                rival.close()

        conn.set_trace_callback(before)
        try:
            mod.record_quote(conn, current, "flour-25kg", 2150)
            ran["refused"] = False
        except fence.StaleClaim:
            ran["refused"] = True
        finally:
            conn.set_trace_callback(None)
        ran["quotes"] = quotes(conn)
    return ran


def test_no_replacement_fits_between_the_check_and_the_write(mod, tmp_path):
    """A replacement tries to claim the work just before each statement of the
    current holder's quote in turn. Wherever it gets in, the quote must not
    land under the generation it superseded; where it cannot get in, the
    quote is written."""
    count = writes_of(mod, tmp_path)
    assert count >= 2, (
        "the quote ran fewer than two statements on the connection: the fence"
        f" must check the claim and write the quote there; {count} statements")
    for boundary in range(1, count + 1):
        ran = quote_with_a_rival_at(mod, tmp_path / f"at-{boundary}.db", boundary)
        if ran["replaced"] is not None:  # the replacement got in first
            assert ran["refused"] and ran["quotes"] == [], (
                f"a replacement claimed the work before statement {boundary} of"
                " the quote, and the superseded holder's quote was still"
                " written: the check and the write must be one write-locked"
                f" transaction; refused={ran['refused']}, quotes {ran['quotes']}")
        else:
            assert ran["quotes"] == [("flour-25kg", 2150, 1)], (
                f"no replacement got in before statement {boundary}, and the"
                " current holder's quote was not written under its generation:"
                f" quotes {ran['quotes']}")
