"""Claims, leases, generations and the fence (chapters 05-06), in one process.

Every test that takes ``conn`` runs twice: on a SQLite file and on a
PostgreSQL store (``store_at``, tests/conftest.py), where the same rules are
kept by ``crashcourse.claims.postgres`` (chapter 10)."""

from __future__ import annotations

import math
import sqlite3

import pytest

from crashcourse import claims, control, store
from crashcourse.claims import fence
from crashcourse.store import count_rows, immediate, opened
from tests.lock_probe import second_writer_got_in

T0 = 1_000_000.0


# ``conn`` (tests/conftest.py): a fresh store on each backend, with these:
pytestmark = pytest.mark.installs.with_args(fence.install)


def queue(conn, n=1, session="s1"):
    return [claims.enqueue(conn, f"phone:{session}:{i}", session, f"restock {i}")
            for i in range(n)]


def test_enqueue_dedupes_by_origin_and_refuses_other_content(conn):
    first = claims.enqueue(conn, "phone:1", "s1", "restock flour")
    assert claims.enqueue(conn, "phone:1", "s1", "restock flour") == first
    with pytest.raises(claims.AssignmentConflict):
        claims.enqueue(conn, "phone:1", "s1", "restock sugar")
    assert count_rows(conn, "work") == 1


def test_assignment_fields_are_immutable(conn):
    (work,) = queue(conn)
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        conn.execute("UPDATE work SET prompt = 'other' WHERE id = :id", {"id": work})
    assert claims.work_row(conn, work)["prompt"] == "restock 0"


# Every other way to put new content under a queued id, per backend: SQLite's
# REPLACE deletes the old row without an UPDATE or DELETE trigger firing.
REWRITES = {
    "sqlite": {
        "insert or replace": "INSERT OR REPLACE INTO work ({columns})"
                             " VALUES ({values})",
        "replace into": "REPLACE INTO work ({columns}) VALUES ({values})",
        "upsert": "INSERT INTO work ({columns}) VALUES ({values})"
                  " ON CONFLICT (id) DO UPDATE SET prompt = excluded.prompt",
    },
    "postgres": {
        "upsert": "INSERT INTO work ({columns}) VALUES ({values})"
                  " ON CONFLICT (id) DO UPDATE SET prompt = excluded.prompt",
    },
}


@pytest.mark.parametrize("how", ["insert or replace", "replace into", "upsert",
                                 "delete, then insert"])
def test_no_statement_puts_other_content_under_a_queued_id(conn, how):
    """Bug: only UPDATE is refused, so INSERT OR REPLACE (or a DELETE and a
    new INSERT) turns the flour request into a sugar request under its id."""
    (work,) = queue(conn)
    row = claims.work_row(conn, work) | {"prompt": "restock sugar"}
    row.pop("seq", None)  # a server numbers its rows itself
    columns = ", ".join(row)
    values = ", ".join(f":{name}" for name in row)
    rewrites = REWRITES[store.dialect(conn).name]
    if how == "delete, then insert":
        statement = "DELETE FROM work WHERE id = :id"
    elif how in rewrites:
        statement = rewrites[how].format(columns=columns, values=values)
    else:
        pytest.skip(f"no {how} on {store.dialect(conn).name}")
    with pytest.raises(sqlite3.IntegrityError, match="immutable"), immediate(conn):
        conn.execute(statement, row)
    assert claims.work_row(conn, work)["prompt"] == "restock 0"


def test_claim_is_exclusive_until_the_lease_runs_out(conn):
    (work,) = queue(conn)
    first = claims.claim(conn, "w1", ttl=10, now=T0)
    assert (first.id, first.generation) == (work, 1)
    assert claims.claim(conn, "w2", ttl=10, now=T0 + 9.9) is None
    second = claims.claim(conn, "w2", ttl=10, now=T0 + 10)
    assert (second.id, second.generation, second.owner) == (work, 2, "w2")
    assert count_rows(conn, "claims") == 2


def test_reused_owner_label_still_gets_a_new_generation(conn):
    queue(conn)
    old = claims.claim(conn, "shop", ttl=1, now=T0)
    new = claims.claim(conn, "shop", ttl=1, now=T0 + 2)
    assert old.owner == new.owner and new.generation == old.generation + 1
    with pytest.raises(fence.StaleClaim) as refused:
        fence.finish(conn, old, "DONE", "stale", now=T0 + 2.5)
    assert refused.value.reason == "superseded"
    assert claims.work_row(conn, new.id)["outcome"] is None


def test_one_live_holder_per_session_and_sessions_are_independent(conn):
    a1, a2 = queue(conn, 2, "a")
    (b1,) = queue(conn, 1, "b")
    assert claims.claim(conn, "w1", ttl=5, now=T0).id == a1
    assert claims.claim(conn, "w2", ttl=5, now=T0).id == b1  # a2 must wait
    assert claims.claim(conn, "w3", ttl=5, now=T0) is None
    claim = claims.claim(conn, "w4", ttl=5, now=T0 + 6)  # a1's lease ran out
    assert claim.id in (a1, b1) and claim.generation == 2


def test_control_work_first_then_oldest(conn):
    claims.enqueue(conn, "phone:old", "s1", "restock")
    urgent = claims.enqueue(conn, "operator:stop", "s2", "stop", control=True)
    assert claims.claim(conn, "w", ttl=5, now=T0).id == urgent


def test_the_oldest_turn_first_and_a_tie_to_the_one_queued_first(conn):
    (old,) = queue(conn, 1, "s1")
    (newer,) = queue(conn, 1, "s2")
    with immediate(conn):  # two turns queued at the same instant: a tie
        for origin, session in (("tie:first", "s3"), ("tie:second", "s4")):
            conn.execute("INSERT INTO work (id, origin, session, prompt, subject,"
                         " role, created) VALUES (:id, :origin, :session, 'x', '',"
                         " 'shop', 1.0)", {"id": claims.work_id_for(origin),
                                           "origin": origin, "session": session})
    taken = [claims.claim(conn, f"w{n}", ttl=5, now=T0).id for n in range(4)]
    tie = [claims.work_id_for("tie:first"), claims.work_id_for("tie:second")]
    assert taken == [*tie, old, newer]


def test_a_named_turn_is_taken_out_of_order_but_never_past_the_rules(conn):
    a1, a2 = queue(conn, 2, "a")
    (b1,) = queue(conn, 1, "b")
    assert claims.claim(conn, "w", ttl=5, now=T0, work_id=b1).id == b1
    assert claims.claim(conn, "w", ttl=5, now=T0, work_id=b1) is None  # held
    assert claims.claim(conn, "w", ttl=5, now=T0, work_id=a1).id == a1
    assert claims.claim(conn, "w", ttl=5, now=T0, work_id=a2) is None  # a1 holds a
    assert claims.claim(conn, "w", ttl=5, now=T0) is None


def test_a_control_only_pass_takes_control_work_and_nothing_else(conn):
    queue(conn, 1, "s1")
    assert claims.claim(conn, "w", ttl=5, now=T0, control_only=True) is None
    urgent = claims.enqueue(conn, "operator:stop", "s2", "stop", control=True)
    assert claims.claim(conn, "w", ttl=5, now=T0, control_only=True).id == urgent


def test_blocked_work_waits_for_its_retry_delay(conn):
    queue(conn)
    claim = claims.claim(conn, "w", ttl=5, now=T0)
    fence.finish(conn, claim, "BLOCKED", "no sign-off", now=T0)
    conn.execute("UPDATE work SET status = 'READY'")  # made ready, delay still applies
    delay = fence.retry_delay(claim.generation)
    assert claims.claim(conn, "w", ttl=5, now=T0 + delay - 0.1) is None
    assert claims.claim(conn, "w", ttl=5, now=T0 + delay).generation == 2


def test_retry_delay_is_bounded():
    assert [fence.retry_delay(g) for g in (1, 2, 6, 40)] == [2.0, 4.0, 60.0, 60.0]


@pytest.mark.parametrize("ttl", [math.nan, math.inf, -1, 0, 3600.5, "5", True])
def test_bad_lease_is_refused_and_nothing_written(conn, ttl):
    queue(conn)
    with pytest.raises((ValueError, TypeError)):
        claims.claim(conn, "w", ttl=ttl)
    assert count_rows(conn, "claims") == 0


@pytest.mark.parametrize("owner", ["", "   ", None])
def test_empty_owner_is_refused(conn, owner):
    queue(conn)
    with pytest.raises(ValueError, match="owner"):
        claims.claim(conn, owner, ttl=5)
    assert claims.work_row(conn, claims.work_id_for("phone:s1:0"))["status"] == "READY"


def test_unknown_terminal_status_is_refused_before_writing(conn):
    queue(conn)
    claim = claims.claim(conn, "w", ttl=5)
    with pytest.raises(ValueError, match="status"):
        fence.finish(conn, claim, "FINISHED", "x")
    assert claims.work_row(conn, claim.id)["status"] == "RUNNING"


def test_stale_observation_leaves_no_row_and_is_audited(conn):
    queue(conn)
    old = claims.claim(conn, "w1", ttl=1, now=T0)
    new = claims.claim(conn, "w2", ttl=5, now=T0 + 1)
    fence.observe(conn, new, {"text": "current"}, now=T0 + 1.5)
    with pytest.raises(fence.StaleClaim):
        fence.observe(conn, old, {"text": "late"}, now=T0 + 1.5)
    assert fence.transcript(conn, new.id) == [{"generation": 2, "text": "current"}]
    refusal = conn.execute("SELECT * FROM refusals").fetchone()
    assert (refusal["generation"], refusal["action"]) == (1, "observe")


def test_expired_lease_refuses_even_without_a_replacement(conn):
    queue(conn)
    claim = claims.claim(conn, "w", ttl=1, now=T0)
    with pytest.raises(fence.StaleClaim, match="lease expired"):
        fence.observe(conn, claim, {"text": "late"}, now=T0 + 1)


def test_forged_claim_with_other_prompt_is_refused(conn):
    queue(conn)
    claim = claims.claim(conn, "w", ttl=5)
    forged = claims.Claim(**{**claim.__dict__, "prompt": "buy 600 crates"})
    with pytest.raises(fence.StaleClaim, match="assignment"):
        fence.observe(conn, forged, {"text": "x"})


def test_pause_stops_claims_and_fenced_writes(conn):
    queue(conn, 1, "a")
    queue(conn, 1, "b")  # free to claim, but for the pause
    claim = claims.claim(conn, "w", ttl=5)
    control.set_paused(conn, True)
    assert claims.claim(conn, "w2", ttl=5) is None
    assert count_rows(conn, "claims") == 1
    with pytest.raises(fence.StaleClaim, match="paused"):
        fence.finish(conn, claim, "DONE", "x")


def test_replaced_epoch_refuses_an_old_claim(conn):
    queue(conn)
    claim = claims.claim(conn, "w", ttl=5)
    conn.execute("UPDATE runtime_control SET epoch = 'epoch-2'")
    with pytest.raises(fence.StaleClaim, match="epoch"):
        fence.observe(conn, claim, {"text": "x"})


def test_operator_cancel_makes_every_claim_stale(conn):
    queue(conn)
    claim = claims.claim(conn, "w", ttl=5)
    assert fence.cancel(conn, claim.id) == claim.generation + 1
    with pytest.raises(fence.StaleClaim) as refused:
        fence.finish(conn, claim, "DONE", "too late")
    assert refused.value.claim == claim  # the refused claim, as offered
    assert claims.work_row(conn, claim.id)["status"] == "CANCELLED"
    assert claims.claim(conn, "w2", ttl=5) is None


def test_finish_writes_the_outcome_column(conn):
    queue(conn)
    claim = claims.claim(conn, "w", ttl=5)
    fence.finish(conn, claim, "DONE", "6 sacks ordered")
    row = claims.work_row(conn, claim.id)
    assert (row["status"], row["outcome"]) == ("DONE", "6 sacks ordered")
    assert "result" not in row


def test_a_busy_database_loses_the_audit_row_never_the_refusal(tmp_path, monkeypatch):
    # SQLite alone: a second connection holds the file's write lock
    with opened(tmp_path / "agent.db", busy_timeout_ms=50) as conn, \
            opened(tmp_path / "agent.db") as other:
        fence.install(conn)
        queue(conn)
        old = claims.claim(conn, "w1", ttl=1, now=T0)
        claims.claim(conn, "w2", ttl=5, now=T0 + 1)
        written, real = [], fence.record_refusal

        def busy_then_record(*args):
            with immediate(other):  # another writer gets in right after the rollback
                written.append(real(*args))

        monkeypatch.setattr(fence, "record_refusal", busy_then_record)
        with pytest.raises(fence.StaleClaim, match="superseded"):
            fence.observe(conn, old, {"text": "late"}, now=T0 + 1.5)
        assert written == [False]  # the audit row was lost...
        assert count_rows(conn, "refusals") == 0
        assert count_rows(conn, "transcript") == 0  # ...and the write still refused


def test_status_lists_in_sql_come_from_the_constants():
    assert store.sql_list(claims.OPEN) == "('READY', 'RUNNING')"
    assert f"IN {store.sql_list(claims.OPEN)}" in claims.ORDINARY
    for bad in ("READY'); DROP TABLE work; --", "two words", ""):
        with pytest.raises(ValueError):
            store.sql_list((bad,))


# --- the order claims are granted in: each test defends one guarantee against
# the one-line bug named in its docstring (was tests/test_guarantees_claims.py)


def test_control_work_comes_first_also_behind_a_turn_the_pass_refuses(conn):
    """Bug: the walk merges a session's later turns after ordinary work.

    Session ``ops`` opens with a control turn of another role (this pass
    refuses it); its second turn is control work of this role. Five older
    ordinary turns wait in other sessions. Control work still comes first."""
    for n in range(5):
        claims.enqueue(conn, f"phone:{n}", f"s{n}", f"restock {n}")
    claims.enqueue(conn, "ops:audit", "ops", "audit", role="auditor", control=True)
    urgent = claims.enqueue(conn, "ops:stop", "ops", "stop", control=True)
    claim = claims.claim(conn, "w", ttl=5, now=T0)
    assert claim.id == urgent


def control_pass_cost(path, ordinary_turns: int) -> int:
    """SQLite VM instructions of one control-only claim that finds nothing."""
    with opened(path) as conn:
        fence.install(conn)
        with immediate(conn):
            conn.executemany(
                "INSERT INTO work (id, origin, session, prompt, subject, role,"
                " created) VALUES (:id, :id, :id, 'restock', '', 'shop', :created)",
                [{"id": f"w{n:05d}", "created": float(n)}
                 for n in range(ordinary_turns)])
        steps = [0]

        def count() -> int:
            steps[0] += 1
            return 0

        conn.set_progress_handler(count, 1)
        try:
            assert claims.claim(conn, "ops", ttl=5, now=T0, control_only=True) is None
        finally:
            conn.set_progress_handler(None, 1)
    return steps[0]


def test_a_control_only_pass_stops_at_the_first_ordinary_turn(tmp_path):
    """Bug: the walk goes on past ordinary work when only control work may be
    taken, reading every queued turn (the claim costs O(queue)). SQLite
    alone: the walk is SQLite's, and its VM instructions are the measure."""
    few = control_pass_cost(tmp_path / "few.db", 20)
    many = control_pass_cost(tmp_path / "many.db", 3000)
    assert many <= 1.25 * few, (few, many)


# --- the door checks of the claims API (issue 14): a string where a bool goes,
# a bool or NaN where a number goes, empty text, each refused with a clear
# TypeError or ValueError BEFORE anything is written (was test_api_inputs.py)


def held(conn) -> tuple[int, int, list]:
    """Claims granted, work queued, and every (status, generation) of work."""
    states = [tuple(row) for row in conn.execute(
        "SELECT status, generation FROM work ORDER BY id")]
    return count_rows(conn, "claims"), count_rows(conn, "work"), states


@pytest.mark.parametrize("control", ["false", "true", "", 0, 1, None, 1.0])
def test_enqueue_refuses_a_control_that_is_not_a_bool(conn, control):
    # "false" is truthy: coerced, it would queue operator CONTROL work
    with pytest.raises(TypeError, match="control must be True or False"):
        claims.enqueue(conn, "phone:1", "s1", "restock", control=control)
    assert count_rows(conn, "work") == 0


def test_enqueue_keeps_true_and_false(conn):
    urgent = claims.enqueue(conn, "op:stop", "s1", "stop", control=True)
    plain = claims.enqueue(conn, "phone:1", "s2", "restock", control=False)
    assert [claims.work_row(conn, w)["control"] for w in (urgent, plain)] == [1, 0]
    # the same origin with the same content is the same work, not a conflict
    assert claims.enqueue(conn, "op:stop", "s1", "stop", control=True) == urgent


@pytest.mark.parametrize("field, value", [
    ("origin", ""), ("origin", "  "), ("origin", 7), ("session", ""),
    ("prompt", None), ("role", ""), ("subject", None),
])
def test_enqueue_refuses_empty_or_non_text_fields(conn, field, value):
    fields = {"origin": "phone:1", "session": "s1", "prompt": "restock"} | {
        field: value}
    with pytest.raises(ValueError, match=field):
        claims.enqueue(conn, **fields)
    assert count_rows(conn, "work") == 0


@pytest.mark.parametrize("options, error", [
    ({"control_only": "no"}, TypeError), ({"control_only": 1}, TypeError),
    ({"control_only": None}, TypeError), ({"role": ""}, ValueError),
    ({"role": None}, ValueError), ({"work_id": ""}, ValueError),
    ({"work_id": 3}, ValueError), ({"now": math.nan}, ValueError),
    ({"now": True}, ValueError), ({"ttl": math.inf}, ValueError),
    ({"ttl": True}, TypeError), ({"ttl": "30"}, TypeError),
])
def test_claim_refuses_bad_arguments_and_grants_nothing(conn, options, error):
    claims.enqueue(conn, "phone:1", "s1", "restock", control=True)
    before = held(conn)
    with pytest.raises(error):
        claims.claim(conn, "w", **({"ttl": 30, "now": T0} | options))
    assert held(conn) == before == (0, 1, [("READY", 0)])


def test_a_valid_claim_still_takes_the_work(conn):
    work = claims.enqueue(conn, "phone:1", "s1", "restock", control=True)
    got = claims.claim(conn, "w", ttl=30, now=T0, control_only=True, work_id=work)
    assert got is not None and got.id == work and got.generation == 1


@pytest.mark.parametrize("origin", [None, 5, b"phone:1", "", " "])
def test_work_id_for_needs_text(origin):
    with pytest.raises(ValueError, match="origin"):
        claims.work_id_for(origin)


@pytest.mark.parametrize("work_id", [None, "", 7])
def test_work_row_and_cancel_name_the_bad_id(conn, work_id):
    with pytest.raises(ValueError, match="work id"):
        claims.work_row(conn, work_id)
    with pytest.raises(ValueError, match="work id"):
        fence.cancel(conn, work_id, now=T0)


# --- issue 23: the claim's door, its order and its lock ---------------------------


@pytest.mark.parametrize("field, value", [("role", ""), ("role", "  "),
                                          ("work_id", ""), ("work_id", 7)])
def test_a_claim_with_a_blank_role_or_work_id_is_refused_before_anything(
        conn, field, value):
    """Bug: ``claims.claim`` without its ``check_text`` for ``role`` or
    ``work_id``: a blank one is read as a rule and silently finds nothing."""
    claims.enqueue(conn, "phone:1", "s1", "restock flour")
    with pytest.raises(ValueError):
        claims.claim(conn, "w", ttl=5, **{field: value})
    assert conn.execute("SELECT count(*) FROM claims").fetchone()[0] == 0


def test_the_oldest_ready_work_is_claimed_first_across_sessions(conn):
    """Bug: ``PICK`` orders by ``created DESC``: the newest work jumps the
    queue. The walk hands the claim one turn first (the oldest, here another
    role's, which the pick refuses), then a batch of several: within it the
    oldest must still come first. Four sessions, claimed oldest first."""
    claims.enqueue(conn, "journal:1", "s0", "run a plan", role="journal")
    shop = [claims.enqueue(conn, f"phone:{i}", f"s{i}", f"restock {i}")
            for i in (1, 2, 3)]
    taken = [claims.claim(conn, f"w{i}", ttl=5).id for i in range(3)]
    assert taken == shop


def test_a_claim_decides_under_the_write_lock(tmp_path, monkeypatch):
    """Bug: ``claim_sqlite`` out of its ``immediate`` block: the pick and the
    grant interleave with another claimer's, and both may take one work."""
    path = tmp_path / "agent.db"
    with opened(path) as setup:
        fence.install(setup)
        claims.enqueue(setup, "phone:1", "s1", "restock flour")
    assert not second_writer_got_in(
        path, monkeypatch, store, "now", lambda conn: claims.claim(conn, "w", ttl=5))


def test_an_enqueue_looks_and_inserts_under_one_write_lock(tmp_path, monkeypatch):
    """Bug: ``enqueue`` out of its ``immediate`` block: two callers queueing
    one origin both find none and the second is refused by the trigger."""
    path = tmp_path / "agent.db"
    with opened(path) as setup:
        fence.install(setup)
    assert not second_writer_got_in(
        path, monkeypatch, store, "now",
        lambda conn: claims.enqueue(conn, "phone:1", "s1", "restock flour"))


def test_an_unknown_work_row_is_a_key_error(conn):
    """Bug: ``work_row`` without its ``raise KeyError``."""
    with pytest.raises(KeyError, match="work-nope"):
        claims.work_row(conn, "work-nope")


def test_a_lapsed_lease_is_taken_and_a_live_one_beside_it_is_not(conn):
    """Bug: where a claim looks for held turns whose lease ran out, the
    lease's end is dropped (``item.expires <= :now``): with one lease live
    and one lapsed, the pass takes the OLDEST held turn, the live one, from
    a holder still at work. Two sessions, an injected clock: the older turn
    is the live one, so claim order alone would pick it."""
    t = 1_796_000_000.0
    live = claims.enqueue(conn, "o:live", "s-live", "p")
    lapsed = claims.enqueue(conn, "o:lapsed", "s-lapsed", "p")
    assert claims.claim(conn, "a", ttl=600, now=t, work_id=live).id == live
    assert claims.claim(conn, "b", ttl=1, now=t, work_id=lapsed).id == lapsed
    taken = claims.claim(conn, "c", ttl=60, now=t + 10)
    assert taken is not None and taken.id == lapsed
    assert claims.work_row(conn, live)["owner"] == "a"
    assert claims.claim(conn, "d", ttl=60, now=t + 10) is None


@pytest.mark.parametrize("after, taken", [(0.0, True), (-2 ** -10, False)],
                         ids=["at-its-end", "a-1024th-before"])
def test_a_lease_is_over_at_its_exact_end_and_not_before(conn, after, taken):
    """Bug: a lease read as over only PAST its end (``expires < :now`` for
    ``expires <= :now``, as in the server's look for a lapsed lease), or
    before it: at its exact end the holder's fence already refuses it
    (``expires > :at``), so a claim must take the work then, and a 1,024th
    of a second earlier must not. An injected clock; both instants exact."""
    t = 1_796_000_000.0
    work = claims.enqueue(conn, "o:1", "s1", "p")
    assert claims.claim(conn, "a", ttl=10, now=t).id == work
    got = claims.claim(conn, "b", ttl=60, now=t + 10 + after)
    assert (got is not None) is taken
    assert claims.work_row(conn, work)["owner"] == ("b" if taken else "a")
