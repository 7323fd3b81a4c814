"""Who may write the journal, and when a probe may settle a step (chapter 07,
issue 19): each test defends one guarantee against the one-line bug named in
its docstring.

The journal runs under a claim on its task; every write is fenced; the last
check before a request leaves (``journal.admit``) refuses a holder that no
longer holds the task, or whose lease cannot cover the action's declared
wait; a step in doubt is settled by its probe only once the lease of the
claim that wrote its intent is over. In one process the store's clock is
injected (``now=``) and a "pause" is a replacement's claim made at a
boundary (``boundary.observing``); with real processes a worker is held at a
boundary or frozen (SIGSTOP) while a replacement runs, then let go.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
import time
from dataclasses import asdict
from types import SimpleNamespace

import pytest

from crashcourse import boundary, claims, control, journal
from crashcourse.claims import fence
from crashcourse.claims.orders import LeaseTooShort
from crashcourse.journal.plan import save_plan
from crashcourse.lab.example import restock_plan
from crashcourse.lab.harness import Harness
from crashcourse.services import drive, mail
from crashcourse.store import count_rows, immediate, opened, table_rows
from crashcourse.workers.journal_worker import (
    HELD,
    STALE,
    build_world,
    paths,
    restock_actions,
)

PLAN = restock_plan()  # 40 renames, the gate (41), two mails (42, 43)
STEPS, FIRST_MAIL = len(PLAN.steps), 42
T = 1_796_000_000.0  # an instant on the injected clock
WORKER = ["-m", "crashcourse.workers.journal_worker"]
LEASE = ["--ttl", "1", "--wait", "0.3"]  # short: the tests wait leases out


class Crash(Exception):
    """Stands in for the process dying inside an action."""


# A real worker keeps its journal in the file under its --dir (SQLite).
sqlite_only = pytest.mark.sqlite_only("a real worker: its journal is a file in --dir")


@pytest.fixture
def world(tmp_path, backend, store_at):
    """The restock plan, the drive and the mail in their files; the journal
    (and the stored plan) in the backend's store."""
    task, where = build_world(str(tmp_path), PLAN), paths(str(tmp_path))
    if backend != "sqlite":
        where["journal"] = store_at("journal")
        with opened(where["journal"]) as conn:
            save_plan(conn, PLAN)
            journal.install(conn)
    with opened(where["journal"]) as conn:
        yield {"conn": conn, "task": task, "where": where, "dir": str(tmp_path),
               "actions": restock_actions(where["drive"], where["mail"])}


def counting(world) -> tuple[dict, list]:
    """The restock actions, each noting the step it performs."""
    performed = []

    def wrap(action):
        def execute(args, key):
            performed.append(int(key.split("/")[1]))
            return action.execute(args, key)

        return action._replace(execute=execute)

    return {name: wrap(a) for name, a in world["actions"].items()}, performed


def rows(world) -> list[dict]:
    return journal.entries(world["conn"], world["task"])


def renamed(world) -> int:
    with opened(world["where"]["drive"]) as drive_db:
        return count_rows(drive_db, "rename_requests")


# --- in one process, on an injected clock ----------------------------------------


def test_a_superseded_holder_writes_no_intent(world):
    """Bug: the intent is committed in a plain transaction, not a fenced one:
    an old holder writes a row a replacement must then settle."""
    conn, task = world["conn"], world["task"]
    old = journal.claim_task(conn, task, "old", ttl=60, now=T)
    new = journal.claim_task(conn, task, "new", ttl=60, now=T + 100)
    assert (old.generation, new.generation) == (1, 2)
    actions, performed = counting(world)
    with pytest.raises(fence.StaleClaim, match="superseded"):
        journal.run_step(conn, task, PLAN.steps[0], actions["rename"], old, now=T)
    assert rows(world) == [] and performed == [] and renamed(world) == 0
    refused = table_rows(conn, "refusals", "seq")
    assert [(r["generation"], r["action"], r["reason"]) for r in refused] == [
        (1, "intent", "superseded")]


def test_an_intent_records_the_claim_that_wrote_it(world):
    """Bug: the intent row leaves its generation out, and no later holder can
    tell whose lease to wait for."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60)
    journal.run_step(conn, task, PLAN.steps[0], world["actions"]["rename"], claim)
    assert [r["generation"] for r in rows(world)] == [claim.generation]


def test_a_step_in_doubt_waits_until_its_holders_lease_is_over(world):
    """Bug: the probe settles a step in doubt while the lease of the claim
    that wrote the intent is live, so a holder that may still send is
    overtaken: here the replacement would run step 5 at T + 30."""
    conn, task = world["conn"], world["task"]
    first = journal.claim_task(conn, task, "first", ttl=60, now=T)
    for step in PLAN.steps[:4]:
        journal.run_step(conn, task, step, world["actions"]["rename"], first, now=T)

    def dies(args, key):
        raise Crash  # after the intent and the admission, before the request

    with pytest.raises(Crash):
        journal.run_step(conn, task, PLAN.steps[4],
                         world["actions"]["rename"]._replace(execute=dies), first,
                         now=T)
    later = journal.claim_task(conn, task, "later", ttl=600, now=T + 100)
    actions, performed = counting(world)
    with pytest.raises(journal.HolderMayStillAct, match="generation 1"):
        journal.run_plan(conn, task, PLAN, actions, later, now=T + 30)
    assert performed == [] and renamed(world) == 4
    assert [(r["step"], r["generation"]) for r in rows(world)
            if r["outcome"] is None] == [(5, 1)]
    done = journal.run_plan(conn, task, PLAN, actions, later, now=T + 100)
    assert done == {"skip": 4, "probe": 0, "run": STEPS - 4}
    assert performed[0] == 5 and drive.duplicate_requests(world["where"]["drive"]) == 0


def test_a_holder_paused_after_its_intent_is_refused_at_admission(world):
    """Bug: no admission check between the intent and the request: a holder
    whose task was claimed by a replacement while it stood after its intent
    sends anyway."""
    conn, task = world["conn"], world["task"]
    old = journal.claim_task(conn, task, "old", ttl=60, now=T)
    taken = []

    def meanwhile(name: str) -> None:  # the replacement claims while old waits
        if name == "step-3:after_intent":
            with opened(world["where"]["journal"]) as other:
                taken.append(journal.claim_task(other, task, "new", ttl=60,
                                                now=T + 100))

    actions, performed = counting(world)
    with boundary.observing(meanwhile), pytest.raises(fence.StaleClaim,
                                                      match="superseded"):
        journal.run_plan(conn, task, PLAN, actions, old, now=T)
    assert taken[0].generation == 2
    assert performed == [1, 2]  # step 3 never left
    assert drive.names(world["where"]["drive"])["f003"] == "scan-003.pdf"
    assert [r["action"] for r in table_rows(conn, "refusals", "seq")][:1] == [
        "admit step 3"]


@pytest.mark.parametrize(("wait_s", "said"), [(90.0, "90.0 s wait"),
                                              (0, "a 0 s wait")],
                         ids=["longer_than_the_lease_left", "zero"])
def test_a_declared_wait_that_does_not_fit_is_refused(world, wait_s, said):
    """Bugs: the admission checks the holder but not that the action's
    declared wait fits in what is left of the lease; or its ``0 < wait_s``
    as ``0 <=``, so an action declaring no time at all is let out, though
    nothing then bounds when it lands (chapter 06's rule wants a positive
    wait that fits)."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60, now=T)
    actions, performed = counting(world)
    action = actions["rename"]._replace(wait_s=wait_s)
    with pytest.raises(LeaseTooShort, match=said):
        journal.run_step(conn, task, PLAN.steps[0], action, claim, now=T)
    assert performed == []
    assert [(r["step"], r["outcome"]) for r in rows(world)] == [(1, None)]


def test_an_intent_renews_a_lease_a_third_spent_in_the_work_and_claims_rows(world):
    """Bug: the lease is never renewed: a plan longer than one lease loses
    its claim halfway (or the claims row keeps the first expiry, and a later
    holder reads the lease as over while its holder still acts). Or it is
    renewed only half spent (``renews`` with a half for three quarters),
    leaving a step less room than the rule says."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60, now=T)
    journal.run_plan(conn, task, PLAN, world["actions"], claim, now=T + 20)
    [row] = table_rows(conn, "claims", "generation")
    assert row["expires"] == journal.holder(conn, task)["expires"] == T + 80


def test_an_intent_leaves_a_lease_barely_spent_as_it_is(world):
    """Bug: every intent rewrites the work and claims rows (``renews`` always
    true): two rows and their index pages in every step's commit, which the
    rule spares until a quarter of the lease is spent beyond the step's wait
    (issue 24)."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60, now=T)
    wait = world["actions"]["rename"].wait_s
    assert 60 - 10 - wait >= (60 - wait) * 3 / 4  # at T + 10 the lease stands
    journal.run_plan(conn, task, PLAN, world["actions"], claim, now=T + 10)
    [row] = table_rows(conn, "claims", "generation")
    assert row["expires"] == journal.holder(conn, task)["expires"] == T + 60


def test_an_intent_renews_a_lease_its_step_s_wait_would_not_fit_in(world):
    """Bug: ``renews`` counts what is spent of the lease without the step's
    declared wait: at T + 1 a 10 s lease has 9 s left, more than three
    quarters of it, so the intent leaves it, and the admission then refuses
    a 9 s wait that a renewed lease holds (``LeaseTooShort``)."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=10, now=T)
    actions, performed = counting(world)
    slow = actions["rename"]._replace(wait_s=9.0)
    assert journal.run_step(conn, task, PLAN.steps[0], slow, claim,
                            now=T + 1) == journal.RUN
    assert performed == [1]
    assert journal.holder(conn, task)["expires"] == T + 11


@pytest.mark.parametrize("spent, expires", [(14.75, T + 60), (14.875, T + 74.875)],
                         ids=["exactly-a-quarter", "just-past-it"])
def test_an_intent_renews_a_lease_strictly_past_a_quarter_spent(world, spent,
                                                                  expires):
    """Bug: ``renews`` with ``<=`` for ``<`` (or its quarter counted on the
    whole lease, not beyond the step's wait): the boundary moves. A 60 s
    lease and a 1 s wait: what is left beyond the wait must fall UNDER
    three quarters of 59 s, 44.25 s; at T + 14.75 exactly 44.25 s is left
    and the lease stands; an eighth of a second later it is renewed to a
    full 60 s from then. Both instants are exact in binary floating point."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60, now=T)
    rename = world["actions"]["rename"]._replace(wait_s=1.0)
    assert (60 - 14.75) - 1.0 == 59 * 3 / 4  # the boundary, exactly
    assert journal.run_step(conn, task, PLAN.steps[0], rename, claim,
                            now=T + spent) == journal.RUN
    [row] = table_rows(conn, "claims", "generation")
    assert row["expires"] == journal.holder(conn, task)["expires"] == expires


@pytest.mark.postgres_only("a row lock held by a second session: SQLite has one writer")
def test_a_fenced_journal_write_waits_for_the_task_s_row_lock(world):
    """Bug: ``holds`` on a server reads the work row without locking it (the
    lone read SQLite's one writer allows): a replacement's claim, which
    locks that row, can commit between the check and the write, and the
    stale intent lands after it (chapter 10). Deterministic: a second
    session holds the task's row lock; the intent's commit, whose wait would
    fail rather than hang, is refused as busy and writes nothing; once the
    lock is let go the same step runs."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60, now=T)
    actions, performed = counting(world)
    conn.raw.execute("SET lock_timeout = 300")  # a wait fails, never hangs
    with opened(world["where"]["journal"]) as locker:
        with immediate(locker, shared=True):
            locker.execute("SELECT id FROM work WHERE id = :id FOR UPDATE",
                           {"id": claim.id})
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                journal.run_step(conn, task, PLAN.steps[0], actions["rename"],
                                 claim, now=T)
    assert rows(world) == [] and performed == []
    assert journal.run_step(conn, task, PLAN.steps[0], actions["rename"], claim,
                            now=T) == journal.RUN
    assert performed == [1]


@pytest.mark.postgres_only("the store lock's SHARED mode exists on a server alone")
def test_a_fenced_journal_write_runs_beside_another_session_s_write(world):
    """Bug: the journal's ``fenced`` takes the store's lock EXCLUSIVE: every
    step's commit then waits for every claim and fenced write of any other
    work (chapter 10: hot paths run side by side, each locking its own
    rows). Deterministic: a second session holds the store's lock SHARED,
    as another claim does; the step, whose wait would fail rather than
    hang, commits its intent and runs meanwhile."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60, now=T)
    actions, performed = counting(world)
    conn.raw.execute("SET lock_timeout = 300")  # a wait fails, never hangs
    with opened(world["where"]["journal"]) as other:
        with immediate(other, shared=True):
            assert journal.run_step(conn, task, PLAN.steps[0], actions["rename"],
                                    claim, now=T) == journal.RUN
    assert performed == [1]
    assert [r["step"] for r in rows(world)] == [1]


@pytest.mark.sqlite_only("SQLite's statement trace shows no intent written")
def test_a_stop_keeps_new_intents_out_and_lets_the_outcome_in(world):
    """Bug: the outcome rides on the fenced commit that a pause refuses: the
    step just performed is left in doubt by the stop."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60)
    rename = world["actions"]["rename"]

    def renames_then_paused(args, key):
        done = rename.execute(args, key)
        if args["file_id"] == "f005":  # the person pauses while step 5 acts
            with opened(world["where"]["journal"]) as other:
                control.set_paused(other, True)
        return done

    actions = {**world["actions"],
               "rename": rename._replace(execute=renames_then_paused)}
    intents = []
    conn.set_trace_callback(
        lambda sql: intents.append(sql) if sql.startswith("INSERT INTO journal")
        else None)
    done = journal.run_plan(conn, task, PLAN, actions, claim)  # no should_stop
    conn.set_trace_callback(None)
    assert done == {"skip": 0, "probe": 0, "run": 5, journal.STOPPED_BEFORE: 6}
    assert len(intents) == 5  # step 6's was never written, not written and undone
    status = journal.journal_status(conn, task, PLAN)
    assert status.summary() == {"confirmed": 5, "in_doubt": 0,
                                "not_started": STEPS - 5}
    assert renamed(world) == 5


def test_a_pause_refuses_the_admission_and_withdraws_the_intent(world):
    """Bug: the admission ignores the pause flag: a step whose intent was
    committed before a stop still sends after it."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60)

    def pause(name: str) -> None:
        if name == "step-2:after_intent":
            with opened(world["where"]["journal"]) as other:
                control.set_paused(other, True)

    actions, performed = counting(world)
    with boundary.observing(pause):
        done = journal.run_plan(conn, task, PLAN, actions, claim)
    assert done[journal.STOPPED_BEFORE] == 2 and performed == [1]
    assert journal.journal_status(conn, task, PLAN).summary()["in_doubt"] == 0


def test_run_task_gives_the_lease_back_and_a_finished_task_is_done(world):
    """Bug: a run that ends keeps its lease: the next run (or a person's
    resume) must wait it out although nobody holds the task."""
    conn, task = world["conn"], world["task"]
    stopped = journal.run_task(conn, task, PLAN, world["actions"], owner="a",
                               ttl=600, should_stop=lambda: renamed(world) >= 3)
    assert stopped[journal.STOPPED_BEFORE] == 4
    assert journal.holder(conn, task)["status"] == claims.READY
    finished = journal.run_task(conn, task, PLAN, world["actions"], owner="b",
                                ttl=600)
    assert finished == {"skip": 3, "probe": 0, "run": STEPS - 3}
    assert journal.holder(conn, task)["status"] == claims.DONE
    again = journal.run_task(conn, task, PLAN, world["actions"], owner="c", ttl=600)
    assert again == {"skip": STEPS, "probe": 0, "run": 0}
    assert [c["owner"] for c in table_rows(conn, "claims", "generation")] == [
        "a", "b"]  # a finished task is not claimed again


# --- real processes: held, frozen, replaced, let go --------------------------------


def start(world, harness, stop_at=None, owner="worker", lease=LEASE):
    return harness.start([*WORKER, "--dir", world["dir"], "--task", world["task"],
                          *lease, "--owner", owner], stop_at=stop_at)


def replace(world, harness) -> object:
    """Wait out the holder's lease (it is not renewed), then run a
    replacement to the end."""
    journal.wait_out(world["conn"], world["task"])
    return start(world, harness, owner="replacement").finish()


def messages_per_step(world) -> dict[int, int]:
    counts = {}
    for m in mail.messages(world["where"]["mail"]):
        step = int(m["operation_key"].split("/")[1])
        counts[step] = counts.get(step, 0) + 1
    return counts


@sqlite_only
@pytest.mark.parametrize("how", ["held", "frozen"])
def test_a_holder_stopped_after_its_intent_sends_nothing_after_its_replacement(
        world, how):
    """Bug: no admission check (or one that ignores the generation): the old
    holder, let go after its replacement finished, mails the order desk a
    second time (issue 19's reproduction)."""
    with Harness() as harness:
        old = start(world, harness, f"step-{FIRST_MAIL}:after_intent", "old")
        old.wait_for_boundary()
        if how == "frozen":
            old.freeze()  # SIGSTOP: alive, doing nothing
            old.release()  # read once it runs again
        new = replace(world, harness)
        assert new.returncode == 0, new.stderr
        old.thaw() if how == "frozen" else old.release()
        late = old.finish()
    assert late.returncode == STALE and "superseded" in json.loads(late.stdout)["stale"]
    assert messages_per_step(world) == {42: 1, 43: 1}
    assert drive.duplicate_requests(world["where"]["drive"]) == 0
    refused = table_rows(world["conn"], "refusals", "seq")
    assert (refused[0]["generation"], refused[0]["action"]) == (1, "admit step 42")


@sqlite_only
@pytest.mark.parametrize("step", [7, FIRST_MAIL])
def test_a_holder_frozen_after_its_admission_sends_late(world, step):
    """The residual window, measured: frozen between its admission and its
    request, the old holder sends after its replacement finished. The drive
    takes the step's operation key, so the late rename is a replay and adds
    no request; the mail provider takes none, so the order desk gets a second
    message, found by the key it carries. Bug this catches: the drive's key
    dropped from the rename (a second request row)."""
    with Harness() as harness:
        old = start(world, harness, f"step-{step}:{journal.ADMITTED}", "old")
        old.wait_for_boundary()
        old.freeze()
        old.release()
        assert replace(world, harness).returncode == 0
        old.thaw()
        late = old.finish()
    assert late.returncode == STALE  # its outcome is refused: superseded
    assert drive.duplicate_requests(world["where"]["drive"]) == 0
    twice = {n for n, count in messages_per_step(world).items() if count > 1}
    assert twice == ({FIRST_MAIL} if step == FIRST_MAIL else set())
    with opened(world["where"]["drive"]) as drive_db:
        replays = sum(r["replays"] for r in table_rows(drive_db, "rename_requests",
                                                       "seq"))
    assert replays == (1 if step == 7 else 0)


@sqlite_only
def test_a_second_run_while_the_lease_is_live_is_held_and_writes_nothing(world):
    """Bug: the worker runs without its claim (or ignores a refused one): two
    live runs write one journal."""
    with Harness() as harness:
        first = start(world, harness, "step-3:after_intent", "first",
                      lease=["--ttl", "60", "--wait", "0.3"])
        first.wait_for_boundary()
        before = (rows(world), table_rows(world["conn"], "work", "id"),
                  table_rows(world["conn"], "claims", "generation"))
        second = start(world, harness, owner="second").finish()
        after = (rows(world), table_rows(world["conn"], "work", "id"),
                 table_rows(world["conn"], "claims", "generation"))
        first.release()
        assert first.finish().returncode == 0
    assert second.returncode == HELD and "held by first" in second.stdout
    assert after == before
    assert renamed(world) == 40


@sqlite_only
@pytest.mark.parametrize("flag, value", [("--ttl", "0"), ("--ttl", "nan"),
                                         ("--ttl", "4000"), ("--ttl", "x"),
                                         ("--wait", "0"), ("--wait", "1"),
                                         ("--wait", "-1"), ("--owner", " ")])
def test_a_bad_lease_is_refused_before_anything(world, flag, value):
    options = {"--dir": world["dir"], "--task": world["task"], "--ttl": "1",
               "--wait": "0.3", flag: value}
    argv = [part for pair in options.items() for part in pair]
    with Harness() as harness:
        done = harness.run([*WORKER, *argv])
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert rows(world) == [] and table_rows(world["conn"], "work", "id") == []


@sqlite_only
def test_a_replacement_killed_at_random_instants_still_sends_nothing_twice(world):
    """Crash during recovery: the first holder stands after the first mail's
    intent; three replacements in turn are SIGKILLed at random instants of
    their runs, each lease waited out; a last one finishes; the first is let
    go. Bug this catches: the admission missing (the first holder mails
    again); whatever the instants, every mail goes once."""
    rng = random.Random(19)
    with Harness() as harness:
        first = start(world, harness, f"step-{FIRST_MAIL}:after_intent", "first")
        first.wait_for_boundary()
        for _ in range(3):
            journal.wait_out(world["conn"], world["task"])
            worker = start(world, harness, owner="replacement")
            # The kill's instant is this trial's input, not a wait for an
            # event: every assertion below must hold whatever it is (a kill
            # before the replacement's first row included), so no scheduler
            # order can pass or fail the test (issue 36, judged).
            time.sleep(rng.uniform(0.05, 0.6))
            worker.kill(expect_sigkill=False)
        last = replace(world, harness)
        first.release()
        late = first.finish()
    assert last.returncode == 0, last.stderr
    assert late.returncode == STALE
    assert journal.finished(world["conn"], world["task"], PLAN)
    assert drive.duplicate_requests(world["where"]["drive"]) == 0
    assert messages_per_step(world) == {42: 1, 43: 1}
    assert set(drive.names(world["where"]["drive"]).values()) == {
        f"invoice-2026-{i:03d}.pdf" for i in range(1, 41)}


@sqlite_only
def test_an_unwind_waits_out_the_lease_and_the_task_is_never_claimed_again(world):
    """Bug: the unwind probes and restores while the killed holder's lease is
    live (refused here: its holder may still act), or leaves the task
    claimable, so a plain run after it renames every file again."""
    from crashcourse.journal import decisions

    with Harness() as harness:
        worker = start(world, harness, "step-5:after_action")
        worker.wait_for_boundary()
        worker.kill()
        undone = decisions.unwind(world["conn"], world["task"], world["actions"],
                                  who="night-owner")
        assert undone["restore"] == [5, 4, 3, 2, 1]
        after = start(world, harness).finish()
    assert after.returncode == 3 and "cancelled" in after.stdout
    assert drive.names(world["where"]["drive"]) == {
        f"f{i:03d}": f"scan-{i:03d}.pdf" for i in range(1, 41)}
    assert journal.holder(world["conn"], world["task"])["status"] == claims.CANCELLED


# --- a step in doubt after a crash: what the journal proves about irreversible
# steps (chapter 07; was tests/test_guarantees_journal.py): each test defends
# one guarantee against the one-line bug named in its docstring


GATE, LAST_MAIL = 41, 43  # the restock plan: 40 renames, the gate, two mails


def dies_in_step(world, number: int):
    """Run the restock plan's steps before ``number``, then die inside step
    ``number`` after its action took effect; the world, for the resume."""
    plan, task, where = PLAN, world["task"], world["where"]
    actions = restock_actions(where["drive"], where["mail"])
    with opened(where["journal"]) as conn:
        claim = journal.claim_task(conn, task, "first", ttl=60)
        for step in plan.steps[:number - 1]:
            journal.run_step(conn, task, step, actions[step.action], claim)
        step = plan.steps[number - 1]
        real = actions[step.action]

        def acts_then_dies(args, key):
            real.execute(args, key)  # the target has it ...
            raise Crash  # ... and the worker died before the outcome

        with pytest.raises(Crash):
            journal.run_step(conn, task, step,
                             journal.Action(acts_then_dies, real.probe), claim)
    return plan, task, where, actions


def replacement(conn, task: str) -> dict:
    """The task claimed an hour on, when the first lease (60 s) is over."""
    at = time.time() + 3600
    return {"claim": journal.claim_task(conn, task, "second", ttl=60, now=at),
            "now": at}


def test_an_irreversible_step_in_doubt_is_not_proved_unsent(world):
    """Bug: ``journal_status`` counts the last row's own step as not started
    (``>=``), so a mail that may have gone out reads as provably unsent."""
    plan, task, where, _ = dies_in_step(world, FIRST_MAIL)
    with opened(where["journal"]) as conn:
        seen = journal.journal_status(conn, task, plan)
    assert seen.last_row == FIRST_MAIL
    assert seen.irreversible_not_started == (LAST_MAIL,)
    assert len(mail.messages(where["mail"])) == 1  # it did go out


def test_a_gate_in_doubt_is_settled_by_its_probe(world):
    """Bug: a step in doubt is withdrawn and run again whatever its probe
    says (for a gate: checked again and recorded as run, not as found)."""
    plan, task, where, actions = dies_in_step(world, GATE)
    with opened(where["journal"]) as conn:
        done = journal.run_plan(conn, task, plan, actions, **replacement(conn, task))
        assert done == {"skip": GATE - 1, "probe": 1, "run": 2}
        assert journal.resolutions(conn, task) == {"run": 42, "probe": 1}
    assert len(mail.messages(where["mail"])) == 2


@sqlite_only
def test_a_resume_waits_out_a_killed_holder_s_lease_before_deciding(world):
    """Bug: ``decisions.resume`` without its ``journal.wait_out``: it records
    the decision and lifts the pause, then finds the killed holder's lease
    still live (``TaskHeld``), a decision written for a run that never ran."""
    from crashcourse.journal import decisions

    with Harness() as harness:
        worker = start(world, harness, "step-5:after_action",
                       lease=["--ttl", "3", "--wait", "0.3"])
        worker.wait_for_boundary()
        worker.kill()
        control.set_paused(world["conn"], True)
        resumed = decisions.resume(world["conn"], world["task"], world["actions"],
                                   who="night-owner", ttl=5)
    assert resumed["done"][journal.PROBE] == 1  # step 5, found done by its probe
    assert [d["decision"] for d in decisions.history(world["conn"], world["task"])
            ] == ["resume"]
    assert journal.journal_status(world["conn"], world["task"], PLAN).summary() == {
        "confirmed": STEPS, "in_doubt": 0, "not_started": 0}


def test_a_decision_without_an_action_for_every_step_writes_nothing(world):
    """Bug: ``decisions._checked`` without its look for a missing action: the
    resume records its decision and lifts the pause before the run finds
    that ``send_mail`` has no action."""
    from crashcourse.journal import decisions

    control.set_paused(world["conn"], True)
    actions = {name: a for name, a in world["actions"].items() if name != "send_mail"}
    for decide in (decisions.resume, decisions.unwind):
        with pytest.raises(KeyError, match="send_mail"):
            decide(world["conn"], world["task"], actions, who="night-owner")
    assert decisions.history(world["conn"], world["task"]) == []
    assert control.is_paused(world["conn"]) is True
    assert rows(world) == []


def test_an_unwind_after_a_cancel_does_not_probe_a_live_holder_s_step(world):
    """Bug: ``decisions.unwind`` without its look at the lease of the claim
    that wrote the step in doubt. An operator's cancel ends the work row's
    lease at once, so ``wait_out`` has nothing to wait for; the holder that
    was admitted before the cancel may still send until ITS lease is over,
    and a probe now could be overtaken."""
    from crashcourse.journal import decisions

    def crashes(args, key):
        raise Crash("admitted, then stopped before the request left")

    rename = world["actions"]["rename"]
    claim = journal.claim_task(world["conn"], world["task"], "live", ttl=60)
    with pytest.raises(Crash):
        journal.run_step(world["conn"], world["task"], PLAN.steps[0],
                         rename._replace(execute=crashes), claim)
    journal.cancel_task(world["conn"], world["task"])
    asked = []
    actions = {**world["actions"], "rename": rename._replace(
        probe=lambda args, key: asked.append(key) or rename.probe(args, key))}
    with pytest.raises(journal.HolderMayStillAct):
        decisions.unwind(world["conn"], world["task"], actions, who="night-owner")
    assert asked == []
    assert [r["outcome"] for r in rows(world)] == [None]  # still in doubt
    assert decisions.unwinds(world["conn"], world["task"]) == []


@pytest.mark.parametrize("ttl, admitted", [(1.5, True), (1.0, False),
                                           (1 + 2 ** -10, True)])
def test_an_action_without_a_declared_wait_needs_one_second_of_lease(
        world, ttl, admitted):
    """Bug: ``DEFAULT_WAIT_S`` other than the 1 s the docs give: an action
    that declares no wait is refused under a 1.5 s lease, or let out under
    exactly 1 s (the wait must fit STRICTLY). Or the admission keeps a
    margin of its own (``wait_s < left - 0.001``): a lease a 1,024th of a
    second longer than the wait is refused. The intent's commit renews the
    lease to ``ttl`` on the injected clock, so ``ttl`` is what is left."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=ttl, now=T)
    actions, performed = counting(world)
    plain = journal.Action(actions["rename"].execute, actions["rename"].probe)
    if admitted:
        assert journal.run_step(conn, task, PLAN.steps[0], plain, claim,
                                now=T) == journal.RUN
        assert performed == [1]
    else:
        with pytest.raises(LeaseTooShort, match="1.0 s wait"):
            journal.run_step(conn, task, PLAN.steps[0], plain, claim, now=T)
        assert performed == []


def test_waiting_out_a_task_nobody_ever_claimed_returns_at_once(world):
    """Bug: ``wait_out``'s ``seen is None or status != RUNNING`` with ``and``:
    a task never queued as work (no holder at all) is an error, not
    "nothing to wait for"; a finished one waits on a lease given back."""
    assert journal.holder(world["conn"], world["task"]) is None
    assert journal.wait_out(world["conn"], world["task"], timeout=1.0) is None
    journal.run_task(world["conn"], world["task"], PLAN, world["actions"],
                     owner="w", ttl=5)
    assert journal.holder(world["conn"], world["task"])["status"] == claims.DONE
    assert journal.wait_out(world["conn"], world["task"], timeout=1.0) is None


def test_a_claim_on_other_work_cannot_settle_this_task_s_step(world):
    """Bug: ``run_step`` without its ``check_claim``: a holder of some other
    work, current on ITS row, settles (here: withdraws) this task's step in
    doubt through the probe."""
    conn, task = world["conn"], world["task"]
    mine = journal.claim_task(conn, task, "w", ttl=5, now=T)

    def crashes(args, key):
        raise Crash("after the admission")

    rename = world["actions"]["rename"]
    with pytest.raises(Crash):
        journal.run_step(conn, task, PLAN.steps[0], rename._replace(
            execute=crashes), mine, now=T)
    other_work = claims.enqueue(conn, "phone:other", "other", "another task",
                                role=journal.ROLE)
    other = claims.claim(conn, "x", ttl=5, now=T + 60, role=journal.ROLE,
                         work_id=other_work)
    with pytest.raises(ValueError, match="is not on task"):
        journal.run_step(conn, task, PLAN.steps[0], rename, other, now=T + 60)
    assert [(r["step"], r["outcome"]) for r in rows(world)] == [(1, None)]


def test_the_holder_of_a_task_reads_as_none_on_a_fresh_file(tmp_path):
    """Bug: ``holder`` without its look for the ``work`` table: asking about
    a task on a file nobody installed raises instead of reading as never
    queued (and a read creates nothing)."""
    with opened(tmp_path / "fresh.db") as conn:
        assert journal.holder(conn, "restock-1") is None
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


def test_a_run_that_fails_gives_its_lease_back_at_once(world):
    """Bug: ``run_task`` without its ``fence.release`` on the way out of a
    failure: the next run finds the lease live (``TaskHeld``) and must wait
    it out, though its holder stopped. The clock is injected and stands
    still, so only a lease given back lets the second run in."""
    conn, task = world["conn"], world["task"]

    def crashes(args, key):
        raise Crash("the action failed")

    failing = {**world["actions"], "rename": world["actions"]["rename"]._replace(
        execute=crashes)}
    with pytest.raises(Crash):
        journal.run_task(conn, task, PLAN, failing, owner="first", ttl=60, now=T)
    assert journal.holder(conn, task)["status"] == claims.READY
    done = journal.run_task(conn, task, PLAN, world["actions"], owner="second",
                            ttl=60, now=T)
    assert done[journal.RUN] == STEPS


def test_a_step_found_done_while_paused_is_stopped_before_not_probed(world):
    """Bug: ``Pending.commit`` says an intent went in when the pause flag
    kept it out: a step the target already shows done is then counted as
    settled by its probe (``PROBE``) though no row records it, and the run
    goes on past a stop. A commit with nothing to write is no refusal."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60)
    assert journal.Pending(conn, task, claim).commit() is True  # nothing held
    first, rename = PLAN.steps[0], world["actions"]["rename"]
    rename.execute(first.args, journal.step_key(task, first))  # the target has it
    control.set_paused(conn, True)
    how = journal.run_step(conn, task, first, rename, claim)
    assert how == journal.STOPPED_BEFORE
    assert rows(world) == [] and renamed(world) == 1


def test_a_withdrawal_never_deletes_a_confirmed_step(world):
    """Bug: the withdrawal's DELETE without ``outcome IS NULL``: withdrawing
    a step deletes its recorded outcome too, and the step would run again.
    Only an intent without its outcome is ever withdrawn."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60)
    first = PLAN.steps[0]
    assert journal.run_step(conn, task, first, world["actions"]["rename"],
                            claim) == journal.RUN
    journal._withdraw(conn, claim, task, first.number)
    assert [(r["step"], r["outcome"] is not None) for r in rows(world)] == [
        (1, True)]


def test_a_paused_task_with_steps_done_stops_before_the_next_one(world):
    """Bug: ``run_task`` under the pause flag counts its stop from the wrong
    step (``skipped - 1``): with 5 steps confirmed, the run stops before
    step 6, and writes nothing. Tried with steps already done, not only a
    fresh task (where 0 + 1 and 0 - 1 are told apart by sign alone)."""
    conn, task = world["conn"], world["task"]
    done = journal.run_task(
        conn, task, PLAN, world["actions"], owner="first", ttl=60,
        should_stop=lambda: journal.confirmed_count(conn, task) >= 5)
    assert done == {"skip": 0, "probe": 0, "run": 5, journal.STOPPED_BEFORE: 6}
    control.set_paused(conn, True)
    again = journal.run_task(conn, task, PLAN, world["actions"], owner="second",
                             ttl=60)
    assert again == {"skip": 5, "probe": 0, "run": 0, journal.STOPPED_BEFORE: 6}
    assert len(rows(world)) == 5 and renamed(world) == 5


def test_only_a_claims_claim_runs_a_step(world):
    """Bug: ``check_claim`` without its type check: any object with the
    right fields (here a copy of a real claim's) runs a step, and nothing
    then says the fence was not asked through a real ``Claim``."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60)
    lookalike = SimpleNamespace(**asdict(claim))
    actions, performed = counting(world)
    with pytest.raises(TypeError, match="claims.Claim"):
        journal.run_step(conn, task, PLAN.steps[0], actions["rename"], lookalike)
    assert performed == [] and rows(world) == []


def test_a_confirmed_step_run_again_is_skipped_and_not_performed(world):
    """Bug: ``run_step`` without its look for a recorded outcome: a step run
    a second time (a caller that does not start from ``confirmed_count``)
    goes on to settle a doubt that is not there instead of skipping."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60)
    actions, performed = counting(world)
    first = PLAN.steps[0]
    assert journal.run_step(conn, task, first, actions["rename"], claim) == "run"
    assert journal.run_step(conn, task, first, actions["rename"], claim) == "skip"
    assert performed == [1] and renamed(world) == 1


def test_a_claim_the_store_never_granted_is_stale(world):
    """Bug: ``lease_length`` without its refusal of a claim with no
    ``claims`` row: a claim carrying a generation the store never granted
    fails on a missing row (``TypeError``) instead of being refused as
    stale, and a caller catching ``StaleClaim`` misses it."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60)
    forged = dataclasses.replace(claim, generation=claim.generation + 1)
    actions, performed = counting(world)
    with pytest.raises(fence.StaleClaim, match="no such claim"):
        journal.run_step(conn, task, PLAN.steps[0], actions["rename"], forged)
    assert performed == [] and rows(world) == []


def test_a_commit_with_nothing_to_write_asks_no_fence(world):
    """Bug: ``Pending.commit`` without its early return when nothing is held:
    a run's closing commit opens a fenced transaction for nothing, and a
    holder superseded meanwhile is refused (a refusal row, ``StaleClaim``)
    though it had nothing left to write."""
    conn, task = world["conn"], world["task"]
    old = journal.claim_task(conn, task, "old", ttl=60, now=T)
    journal.claim_task(conn, task, "new", ttl=60, now=T + 100)
    assert journal.Pending(conn, task, old, now=T + 100).commit() is True
    assert table_rows(conn, "refusals", "seq") == []


def test_a_run_stops_at_the_intent_the_pause_flag_kept_out(world):
    """Bug: ``run_step`` goes on past an intent its commit did not write
    (the pause flag, read under the intent's lock): the step reaches its
    ``after_intent`` boundary and asks for an admission with no intent in
    the journal. The run ends at that commit, before anything else."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60)
    rename, seen = world["actions"]["rename"], []

    def renames_then_paused(args, key):
        if args["file_id"] == "f002":  # the person pauses while step 2 acts
            control.set_paused(conn, True)
        return rename.execute(args, key)

    actions = {**world["actions"],
               "rename": rename._replace(execute=renames_then_paused)}
    with boundary.observing(seen.append):
        done = journal.run_plan(conn, task, PLAN, actions, claim)
    assert done[journal.STOPPED_BEFORE] == 3
    assert seen[-2:] == ["step-2:after_outcome", "step-3:before_intent"]


def test_waiting_out_a_lease_renewed_meanwhile_is_held_at_once(world, monkeypatch):
    """Bug: ``wait_out`` does not raise when the holder renews its lease
    while a person waits (real clock): someone is at work on the task, yet
    the wait goes on, to its timeout or until that holder's new lease ends.
    The renewal is made deterministic: it happens right after the first look
    at the lease (another connection's fenced write), not by a race."""
    conn, task = world["conn"], world["task"]
    claim = journal.claim_task(conn, task, "w", ttl=60)
    real_lease_over, renewed = journal.lease_over, []

    def lease_over_then_renewed(*args, **options):
        answer = real_lease_over(*args, **options)
        if not renewed:
            with opened(world["where"]["journal"]) as other, \
                    fence.fenced(other, claim, "renew", record=True):
                renewed.append(fence.renew_locked(other, claim, 120))
        return answer

    monkeypatch.setattr(journal, "lease_over", lease_over_then_renewed)
    with pytest.raises(journal.TaskHeld, match="renewed its lease"):
        journal.wait_out(conn, task, timeout=10)
    assert len(renewed) == 1


def test_waiting_out_a_live_lease_past_the_timeout_is_held(world):
    """Bug: ``wait_out`` swallows its bounded wait's timeout: a lease still
    live after ``timeout`` seconds (real clock) returns as if it had ended,
    and a person's decision goes ahead under a live holder."""
    conn, task = world["conn"], world["task"]
    journal.claim_task(conn, task, "w", ttl=60)
    with pytest.raises(journal.TaskHeld, match=r"past 0\.2 s"):
        journal.wait_out(conn, task, timeout=0.2)


def test_an_admission_of_work_the_file_never_queued_is_refused_as_stale(world):
    """Bug: ``holds`` without its fallback to the fence when its one read
    finds no row: a claim on work this file never queued (here: a claim made
    in another file) fails on a missing row (``TypeError``) instead of
    being refused as stale, "no such work", and noted."""
    conn, task = world["conn"], world["task"]
    with opened(f"{world['dir']}/elsewhere.sqlite") as other:
        journal.install(other)
        foreign = journal.claim_task(other, task, "w", ttl=60)
    journal.install(conn)
    with pytest.raises(fence.StaleClaim, match="no such work"):
        journal.admit(conn, foreign, task, PLAN.steps[0], 1.0)
    assert [(r["action"], r["reason"]) for r in table_rows(conn, "refusals", "seq")
            ] == [("admit step 1", "no such work")]


@sqlite_only
def test_a_replacement_beside_a_holder_paused_holding_the_lock_says_held(world):
    """Issue 35: a holder frozen (SIGSTOP) inside its intent's write
    transaction keeps SQLite's one write lock; a replacement started once its
    lease is over waited out the busy timeout and exited 74, "the machine
    refused: database is locked". It is not the machine: another holder has
    the journal, so it is the documented "held" (4), one JSON line, nothing
    written. Thawed, the frozen holder's write does not commit (its lease
    ended: the fence's check at commit)."""
    with Harness() as harness:
        first = start(world, harness, "fenced:intent", "first")
        first.wait_for_boundary()
        first.freeze()  # inside the transaction, holding the write lock
        first.release()  # read once it runs again
        before = (rows(world), table_rows(world["conn"], "claims", "generation"))
        journal.wait_out(world["conn"], world["task"])
        second = start(world, harness, owner="second").finish()
        after = (rows(world), table_rows(world["conn"], "claims", "generation"))
        first.thaw()
        ended = first.finish()
    assert second.returncode == HELD, second.stderr
    assert "Traceback" not in second.stderr and second.stderr == ""
    assert "held" in json.loads(second.stdout)
    assert after == before  # the replacement wrote nothing
    assert ended.returncode == STALE, ended.stderr
    assert rows(world) == before[0]  # nor did the thawed holder


@sqlite_only
def test_a_replacement_beside_a_holder_frozen_inside_the_mail_transaction(world):
    """Issue 35 (review 2026-12-02): a holder frozen (SIGSTOP) inside the mail
    provider's own transaction (``mail:submit:admitted``: admitted, its
    message not yet committed) keeps the provider's lock. The replacement
    exited 74 ("the machine refused: database is locked"), then 4 with a
    line blaming the journal's lock. It is held, by a process inside the
    service's transaction: 4, one line naming the mail provider, nothing
    sent by it; the step stays in doubt. Thawed, the holder's message
    commits (its residual window) and it exits stale; a third run probes,
    finds that message and sends no second: each mail once, never twice."""
    with Harness() as harness:
        first = start(world, harness, f"{mail.SUBMIT}:admitted", "first")
        first.wait_for_boundary()
        first.freeze()  # inside the provider's transaction, holding its lock
        first.release()  # read once it runs again
        journal.wait_out(world["conn"], world["task"])
        second = start(world, harness, owner="second").finish()
        unsent = messages_per_step(world)
        first.thaw()
        ended = first.finish()
        sent = messages_per_step(world)
        third = start(world, harness, owner="third").finish()
    mail_step = next(s.number for s in PLAN.steps if s.action == "send_mail")
    assert second.returncode == HELD, second.stderr
    assert second.stderr == ""
    assert "mail provider" in json.loads(second.stdout)["held"]
    assert unsent == {}  # the replacement's wait sent nothing
    assert ended.returncode == STALE, ended.stderr
    assert sent == {mail_step: 1}  # the frozen holder's, from its window
    assert third.returncode == 0, third.stderr
    assert messages_per_step(world) == {  # the probe found it; each step once
        s.number: 1 for s in PLAN.steps if s.action == "send_mail"}
    assert [r["outcome"] is not None for r in rows(world)
            if r["step"] == mail_step] == [True]
