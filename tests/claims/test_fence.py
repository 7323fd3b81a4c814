"""Every fenced write refuses a holder that is no longer current (chapter 06).

The table: each write that runs under a claim (``fence.observe``,
``fence.finish`` to each end, ``orders.propose``, ``orders.admit``,
``orders.send``, ``orders.lookup``) against each way a claim stops being the
live one: superseded by a newer claim (with the SAME owner label, so only the
generation tells them apart), its lease run out with nobody after it,
cancelled by the operator, the runtime paused, the authority epoch replaced.
Each is refused with ``StaleClaim`` naming why, and no row of any table
changes except the one audit row in ``refusals``; ``send`` never reaches the
real supplier. A fresh claim makes the same write, as the control.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crashcourse import claims, control, store
from crashcourse.claims import fence, orders
from crashcourse.lab.example import FLOUR, ScriptedModel
from crashcourse.store import count_rows, opened, table_rows
from crashcourse.store.dialect import SQLITE

TTL = 60.0  # a live claim's lease: far beyond any test's run


def every_row(conn) -> dict[str, list[dict]]:
    """Every row of every table but ``refusals`` (the audit trail grows), each
    table's rows sorted: the same rows compare equal on either backend."""
    if store.dialect(conn) is SQLITE:
        tables = ("SELECT name FROM sqlite_master WHERE type = 'table'"
                  " AND name NOT LIKE 'sqlite_%'")
    else:
        tables = ("SELECT table_name FROM information_schema.tables"
                  " WHERE table_schema = current_schema()")
    names = sorted(row[0] for row in conn.execute(tables) if row[0] != "refusals")
    return {name: sorted((dict(row) for row in conn.execute(
        f"SELECT * FROM {name}")), key=repr) for name in names}


def in_order(conn, table: str) -> list[dict]:
    """Every row of ``table`` (``transcript``, ``refusals``) as written."""
    return table_rows(conn, table, order_by="seq")


def supplier_has(supplier, operation_key: str) -> int:
    with opened(supplier.db) as conn:
        return conn.execute(
            "SELECT count(*) FROM orders WHERE operation_key = :operation_key",
            {"operation_key": operation_key}).fetchone()[0]


# --- the ways a claim stops being current: each returns why ------------------


def lapse(conn, claim) -> None:
    """Its lease runs out: the row's end moves into the past, as waiting would."""
    conn.execute("UPDATE work SET expires = :past WHERE id = :id",
                 {"past": time.time() - 1.0, "id": claim.id})


def superseded(conn, claim) -> str:
    lapse(conn, claim)
    newer = claims.claim(conn, claim.owner, ttl=TTL, work_id=claim.id)
    assert (newer.owner, newer.generation) == (claim.owner, claim.generation + 1)
    return "superseded"


def expired(conn, claim) -> str:
    lapse(conn, claim)
    return "lease expired"


def cancelled(conn, claim) -> str:
    fence.cancel(conn, claim.id)
    return "superseded"  # a cancel gives the work a generation nobody holds


def paused(conn, claim) -> str:
    control.set_paused(conn, True)
    return "paused"


def epoch_replaced(conn, claim) -> str:
    conn.execute("UPDATE runtime_control SET epoch = 'epoch-2'")
    return "authority epoch replaced"


STATES = {"superseded": superseded, "expired": expired, "cancelled": cancelled,
          "paused": paused, "epoch_replaced": epoch_replaced}


# --- the fenced writes: prepare under the live claim, then write -------------


def signed_off(conn, claim) -> str:
    operation_key = orders.propose(conn, claim, ScriptedModel(FLOUR))
    orders.sign_off(conn, operation_key)
    return operation_key


def no_preparation(conn, claim) -> None:
    return None


def admit_and_read(conn, claim, key, supplier):
    """``admit``, and the order's status after it."""
    orders.admit(conn, claim, key, wait_s=1.0)
    return orders.order_for(conn, claim.id)["status"]


WRITES = {
    # name: (prepare(conn, claim), write(conn, claim, prepared, supplier),
    #        the action its refusal is audited as, what a fresh claim's write returns)
    "observe": (no_preparation,
                lambda conn, claim, _, __: fence.observe(conn, claim, {"text": "x"}),
                "observe", None),
    "finish_done": (no_preparation,
                    lambda conn, claim, _, __: fence.finish(
                        conn, claim, claims.DONE, "ordered"), "finish", None),
    "finish_blocked": (no_preparation,
                       lambda conn, claim, _, __: fence.finish(
                           conn, claim, claims.BLOCKED, "waiting"), "finish", None),
    "finish_cancelled": (no_preparation,
                         lambda conn, claim, _, __: fence.finish(
                             conn, claim, claims.CANCELLED, "dropped"),
                         "finish", None),
    "propose": (no_preparation,
                lambda conn, claim, _, __: orders.propose(
                    conn, claim, ScriptedModel(FLOUR)), "propose", None),
    "admit": (signed_off, admit_and_read, "send", orders.SENDING),
    "send": (signed_off,
             lambda conn, claim, key, supplier: orders.send(
                 conn, claim, key, supplier.url), "send", orders.CONFIRMED),
    "lookup": (signed_off,
               lambda conn, claim, key, supplier: orders.lookup(
                   conn, key, supplier.url, claim), "lookup", orders.NOT_FOUND),
}


# ``conn`` (tests/conftest.py): a fresh store on each backend, with these:
pytestmark = pytest.mark.installs.with_args(orders.install)


def live_claim(conn, origin: str):
    work = claims.enqueue(conn, origin, origin, "restock flour")
    claim = claims.claim(conn, "w1", ttl=TTL, work_id=work)
    assert claim is not None and claim.generation == 1
    return claim


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("write", WRITES)
def test_a_stale_claim_is_refused_and_nothing_changes(conn, supplier, write, state):
    prepare, act, action, _ = WRITES[write]
    claim = live_claim(conn, f"phone:{write}:{state}")
    prepared = prepare(conn, claim)
    reason = STATES[state](conn, claim)
    before = every_row(conn)
    with pytest.raises(fence.StaleClaim) as refused:
        act(conn, claim, prepared, supplier)
    assert refused.value.reason == reason
    assert refused.value.claim == claim
    assert every_row(conn) == before  # not one row added, changed or removed
    audit = in_order(conn, "refusals")
    assert [(r["generation"], r["action"], r["reason"]) for r in audit] == [
        (claim.generation, action, reason)]
    if prepared is not None:  # nothing reached the supplier either
        assert supplier_has(supplier, prepared) == 0


@pytest.mark.parametrize("write", WRITES)
def test_a_fresh_claim_makes_the_same_write(conn, supplier, write):
    prepare, act, _, allowed = WRITES[write]
    claim = live_claim(conn, f"phone:{write}:fresh")
    prepared = prepare(conn, claim)
    before = every_row(conn)
    answer = act(conn, claim, prepared, supplier)
    assert every_row(conn) != before  # the control: this write does write
    assert in_order(conn, "refusals") == []
    if allowed is not None:
        assert answer == allowed
    if write == "send":
        assert supplier_has(supplier, prepared) == 1
    if write == "lookup":  # the fenced part: this claim has looked it up
        order = orders.order_for(conn, claim.id)
        assert order["checked_generation"] == claim.generation


@pytest.mark.parametrize("write", ["observe", "finish_done", "propose", "admit"])
def test_another_owner_at_the_same_generation_is_refused(conn, supplier, write):
    # A forged claim: right work, right generation, someone else's name.
    prepare, act, action, _ = WRITES[write]
    claim = live_claim(conn, f"phone:{write}:forged")
    prepared = prepare(conn, claim)
    forged = claims.Claim(**{**claim.__dict__, "owner": "intruder"})
    before = every_row(conn)
    with pytest.raises(fence.StaleClaim, match="another owner"):
        act(conn, forged, prepared, supplier)
    assert every_row(conn) == before


def test_the_lease_ends_at_its_expiry_not_after(conn):
    claim = live_claim(conn, "phone:edge")
    before = every_row(conn)
    with pytest.raises(fence.StaleClaim, match="lease expired"):
        fence.observe(conn, claim, {"text": "late"}, now=claim.expires)
    assert every_row(conn) == before
    fence.observe(conn, claim, {"text": "in time"}, now=claim.expires - 0.001)
    assert fence.transcript(conn, claim.id) == [{"generation": 1, "text": "in time"}]


T0 = 1_800_000_000.0
OFFSETS = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 1.5]),  # x the lease
                    st.floats(min_value=0.0, max_value=2.0))


@settings(max_examples=80, deadline=None)
@given(ttl=st.one_of(st.sampled_from([0.5, 30.0, 3600.0]),
                     st.floats(min_value=0.01, max_value=3600.0)),
       rival_at=OFFSETS, write_at=OFFSETS,
       skew=st.one_of(st.sampled_from([-90.0, 0.0, 90.0]),
                      st.floats(min_value=-120.0, max_value=120.0)))
def test_under_two_clocks_only_the_live_claim_writes(ttl, rival_at, write_at, skew):
    """Bug: the lease is judged by the writer's clock (or ends after its
    expiry), so a holder whose clock says "still mine" writes over a
    replacement whose clock ran ahead. A holds the work from T0 for ``ttl``;
    a rival tries to claim at ``rival_at`` x ttl on A's clock, its own clock
    off by ``skew`` s; then A writes at ``write_at`` x ttl on its own clock
    (1.0: exactly the lease's end). A's write lands only if the rival got
    nothing and A's lease has not ended by A's clock. SQLite alone: a fresh
    file per example; a server's own clock is tests/claims/test_postgres.py's."""
    with tempfile.TemporaryDirectory() as folder, \
            opened(Path(folder) / "agent.db") as conn:
        fence.install(conn)
        work = claims.enqueue(conn, "phone:clocks", "counter", "restock flour")
        held = claims.claim(conn, "a", ttl=ttl, now=T0)
        rival_now = T0 + rival_at * ttl + skew
        rival = claims.claim(conn, "b", ttl=ttl, now=rival_now)
        assert (rival is not None) == (rival_now >= held.expires)
        write_now = T0 + write_at * ttl
        try:
            fence.observe(conn, held, {"text": "a"}, now=write_now)
            landed = True
        except fence.StaleClaim as stale:
            landed = False
            assert stale.reason == ("superseded" if rival else "lease expired")
        assert landed == (rival is None and write_now < held.expires)
        assert len(fence.transcript(conn, work)) == int(landed)


def test_work_that_is_not_running_refuses_even_under_a_live_lease(conn):
    # Only the status differs: same generation, same owner, lease still live.
    claim = live_claim(conn, "phone:status")
    conn.execute("UPDATE work SET status = :ready WHERE id = :id",
                 {"ready": claims.READY, "id": claim.id})
    with pytest.raises(fence.StaleClaim, match="not running"):
        fence.finish(conn, claim, claims.DONE, "late")
    assert claims.work_row(conn, claim.id)["status"] == claims.READY


def test_a_claim_on_work_that_does_not_exist_is_refused(conn):
    claim = live_claim(conn, "phone:real")
    ghost = claims.Claim(**{**claim.__dict__, "id": "work-ghost"})
    with pytest.raises(fence.StaleClaim, match="no such work"):
        fence.observe(conn, ghost, {"text": "x"})
    assert in_order(conn, "transcript") == []


# --- what finish and cancel leave on the row ----------------------------------


@pytest.mark.parametrize("status", [claims.DONE, claims.BLOCKED, claims.CANCELLED])
def test_finish_ends_the_lease_and_the_same_claim_cannot_write_again(conn, status):
    claim = live_claim(conn, f"phone:end:{status}")
    fence.finish(conn, claim, status, "over", now=claim.expires - 30)
    row = claims.work_row(conn, claim.id)
    assert (row["status"], row["expires"], row["finished"]) == (
        status, None, claim.expires - 30)
    with pytest.raises(fence.StaleClaim):
        fence.observe(conn, claim, {"text": "after the end"})
    assert in_order(conn, "transcript") == []


@pytest.mark.parametrize("status", [claims.READY, claims.RUNNING, "done", ""])
def test_finish_only_to_an_end_status(conn, status):
    claim = live_claim(conn, f"phone:not-an-end:{status}")
    before = every_row(conn)
    with pytest.raises(ValueError, match="status"):
        fence.finish(conn, claim, status, "x")
    assert every_row(conn) == before


def test_cancel_leaves_the_work_to_nobody_and_says_when(conn):
    claim = live_claim(conn, "phone:cancel")
    at = claim.expires - 30
    assert fence.cancel(conn, claim.id, now=at) == claim.generation + 1
    row = claims.work_row(conn, claim.id)
    assert (row["status"], row["owner"], row["expires"], row["finished"]) == (
        claims.CANCELLED, fence.OPERATOR, None, at)
    assert claims.claim(conn, claim.owner, ttl=TTL) is None  # not claimable again


def test_the_transcript_reads_back_in_the_order_it_was_written(conn):
    claim = live_claim(conn, "phone:order")
    for text in ("first", "second", "third"):
        fence.observe(conn, claim, {"text": text})
    assert [m["text"] for m in fence.transcript(conn, claim.id)] == [
        "first", "second", "third"]


def test_an_audit_fault_that_is_not_a_busy_store_is_not_hidden(conn):
    # Only "busy"/"locked" may cost the audit row; any other fault is raised.
    claim = live_claim(conn, "phone:fault")
    conn.execute("DROP TABLE refusals")
    # sqlite3's OperationalError, or the server's own error (not a lock)
    with pytest.raises(Exception, match="refusals"):
        fence.record_refusal(conn, claim, "observe", "superseded")


# --- more than one work item, and what a message may hold -------------------


def test_each_work_reads_back_its_own_transcript_only(conn):
    """Bug: ``transcript`` reads every work's messages (its ``WHERE work_id``
    dropped): with one work item in the store nobody would see it."""
    first, second = live_claim(conn, "phone:one"), live_claim(conn, "phone:two")
    for claim, text in ((first, "a1"), (second, "b1"), (first, "a2")):
        fence.observe(conn, claim, {"text": text})
    assert [m["text"] for m in fence.transcript(conn, first.id)] == ["a1", "a2"]
    assert [m["text"] for m in fence.transcript(conn, second.id)] == ["b1"]


def test_a_record_of_the_past_is_judged_against_its_own_work_row(conn):
    """Bug: ``assert_current(record=True)`` reads the first work row, not
    its claim's (its ``WHERE id`` dropped): with two work items the second's
    holder is refused its own release, or the first's row is judged for it."""
    first, second = live_claim(conn, "phone:one"), live_claim(conn, "phone:two")
    fence.release(conn, second, done=True, outcome="sent")
    assert [claims.work_row(conn, c.id)["status"] for c in (first, second)] == [
        claims.RUNNING, claims.DONE]
    assert in_order(conn, "refusals") == []
    fence.release(conn, first, done=False)
    assert claims.work_row(conn, first.id)["status"] == claims.READY


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_a_message_json_cannot_spell_is_refused_and_nothing_written(conn, number):
    """Bug: ``observe`` writes NaN or Infinity into the transcript (JSON has no
    such number: the row would not read back as the JSON it claims to be)."""
    claim = live_claim(conn, "phone:nan")
    before = every_row(conn)
    with pytest.raises(ValueError):
        fence.observe(conn, claim, {"count": number})
    assert every_row(conn) == before


def test_finish_may_leave_the_outcome_empty(conn):
    """Bug: ``finish`` refuses an empty outcome (the column's default is
    the empty text; only a non-string is wrong)."""
    claim = live_claim(conn, "phone:quiet")
    fence.finish(conn, claim, claims.DONE, "")
    assert claims.work_row(conn, claim.id)["outcome"] == ""
    with pytest.raises(ValueError, match="outcome"):
        fence.finish(conn, live_claim(conn, "phone:bad"), claims.DONE, None)


def test_the_audit_row_says_whether_it_was_written(tmp_path):
    """Bug: ``record_refusal`` says False when it wrote the row (or True when a
    busy store cost it). Deterministic: a second connection holds the write
    lock, so the audit row cannot be written; released, it is. SQLite alone:
    the file's write lock (a server's writers are tests/claims/test_postgres.py's)."""
    path = tmp_path / "agent.db"
    with opened(path, busy_timeout_ms=50) as conn, opened(path) as holder:
        orders.install(conn)
        claim = live_claim(conn, "phone:audit")
        holder.execute("BEGIN IMMEDIATE")  # the write lock, held
        try:
            assert fence.record_refusal(conn, claim, "observe", "superseded") is False
        finally:
            holder.execute("ROLLBACK")
        assert in_order(conn, "refusals") == []
        assert fence.record_refusal(conn, claim, "observe", "superseded") is True
        assert [(r["action"], r["reason"]) for r in in_order(conn, "refusals")] == [
            ("observe", "superseded")]


def test_a_renewal_moves_its_own_lease_and_no_other(conn):
    """Bug: ``renew_locked`` moves more than its own lease: another work's at
    the same generation (its ``WHERE id`` dropped), or the claims row of an
    earlier generation on the same work (its ``generation`` dropped), which a
    later holder reads to know whether that holder's lease is over (ch. 07)."""
    first = live_claim(conn, "phone:renewed")
    other = live_claim(conn, "phone:other")
    lapse(conn, first)
    lapse(conn, other)
    second = claims.claim(conn, "w2", ttl=TTL, work_id=first.id)
    other = claims.claim(conn, "w3", ttl=TTL, work_id=other.id)
    assert second.generation == other.generation == first.generation + 1

    def leases() -> dict:
        return {"work": {r["id"]: r["expires"] for r in conn.execute(
                             "SELECT id, expires FROM work")},
                "claims": {(r["work_id"], r["generation"]): r["expires"]
                           for r in conn.execute(
                               "SELECT work_id, generation, expires FROM claims")}}

    before = leases()
    with fence.fenced(conn, second, "renew", record=True):
        ends = fence.renew_locked(conn, second, TTL, now=second.expires + 0.5 - TTL)
    assert ends == second.expires + 0.5
    after = leases()
    assert after["work"] == {**before["work"], second.id: ends}
    assert after["claims"] == {**before["claims"], (second.id, second.generation): ends}
    assert after["work"][other.id] == before["work"][other.id]


# --- the door checks of a fenced write (issue 14) ---------------------------


@pytest.mark.parametrize("message", ["text", ["a"], None, 3])
def test_a_transcript_message_that_is_not_a_dict_is_refused_unwritten(conn, message):
    # written, it would make every later read of the transcript fail
    claims.enqueue(conn, "phone:9", "s9", "restock")
    claim = claims.claim(conn, "w1", ttl=30)
    with pytest.raises(TypeError, match="message must be a dict"):
        fence.observe(conn, claim, message)
    assert count_rows(conn, "transcript") == 0
    fence.observe(conn, claim, {"said": "hello"})
    assert [m["said"] for m in fence.transcript(conn, claim.id)] == ["hello"]


@pytest.mark.parametrize("generation", [True, "3", 2.0, None])
def test_a_retry_delay_needs_an_integer_generation(generation):
    with pytest.raises(TypeError, match="generation must be an int"):
        fence.retry_delay(generation)
    assert fence.retry_delay(1) == 2.0
