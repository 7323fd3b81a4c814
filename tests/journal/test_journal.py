"""The two-phase journal and the durable plan (chapter 07), in one process.

A crash is simulated here by an action that raises after (or instead of)
touching the drive; the real SIGKILL experiments are in
tests/checkpoints/test_ch07_random_kill_campaign.py.
Every run holds a claim on its task (``journal.claim_task``); a run after a
simulated crash is a replacement that claims the task once the first lease is
over, on an injected clock an hour later (``replacement``). Who may write the
journal, and when a probe may settle a step, is in tests/journal/test_holders.py.
The journal's rules run on both backends (``store_at``: a SQLite file, a
PostgreSQL schema, chapter 10); what is about SQLite itself (its trace of
COMMITs, its virtual-machine count, a read-only file, a writer's file lock),
the real kills and the checks at the door, on SQLite files.
"""

import json
import os
import sqlite3
import time

import pytest

from crashcourse import journal, store
from crashcourse.claims import fence
from crashcourse.effects import operation_key
from crashcourse.journal.plan import (
    GateFailed,
    Plan,
    PlanChanged,
    Step,
    UnknownTask,
    first_irreversible,
    load_plan,
    make_plan,
    order_plan,
    save_plan,
)
from crashcourse.lab.example import restock_plan
from crashcourse.lab.harness import Harness
from crashcourse.services import drive, mail
from crashcourse.store import immediate, opened
from crashcourse.store.dialect import SQLITE
from crashcourse.workers.journal_worker import build_world, paths, restock_actions

# The restock plan: 40 renames, the gate verify_drive (41), two mails (42-43).
STEPS, GATE, MAILS = 43, 41, (42, 43)
# SQLite itself (its COMMIT trace, VM count, a read-only file, a file lock),
# real kills, and the checks at the door (refused before any store is read).
sqlite_only = pytest.mark.sqlite_only("SQLite itself, real kills, or the door")


class Crash(Exception):
    """Stands in for the process dying inside an action."""


@pytest.fixture
def world(tmp_path, backend, store_at):
    """The restock plan, the drive and the mail in their files; the journal
    (and the stored plan) in the backend's store."""
    plan = restock_plan()
    task = build_world(str(tmp_path), plan)
    where = paths(str(tmp_path))
    if backend != "sqlite":
        where["journal"] = store_at("journal")
        with opened(where["journal"]) as jc:
            save_plan(jc, plan)
            journal.install(jc)
    with opened(where["journal"]) as jc:
        yield {"journal": jc, "drive": where["drive"], "mail": where["mail"],
               "plan": plan, "task": task, "where": where,
               "claim": journal.claim_task(jc, task, "first", ttl=60),
               "actions": restock_actions(where["drive"], where["mail"])}


def run(world, *args, claim=None, **options):
    """``run_plan`` on the world's plan, under the first claim unless told."""
    return journal.run_plan(world["journal"], world["task"], world["plan"],
                            *(args or (world["actions"],)),
                            claim or world["claim"], **options)


def step(world, s, action, **options):
    """``run_step`` under the first claim."""
    return journal.run_step(world["journal"], world["task"], s, action,
                            world["claim"], **options)


def replacement(world) -> dict:
    """A later holder: the task claimed an hour on (the first lease, 60 s, is
    over by then), and ``run_plan``'s options for running under it."""
    at = time.time() + 3600
    claim = journal.claim_task(world["journal"], world["task"], "second", ttl=60,
                               now=at)
    assert claim is not None and claim.generation == world["claim"].generation + 1
    return {"claim": claim, "now": at}


def crash_at(world, number: int, act_first: bool):
    """Run steps 1..number-1, then crash inside step ``number``'s action."""
    plan, actions = world["plan"], world["actions"]
    journal.install(world["journal"])
    for s in plan.steps[: number - 1]:
        step(world, s, actions[s.action])
    real = actions[plan.steps[number - 1].action]

    def dies(args, key):
        if act_first:
            real.execute(args, key)
        raise Crash

    with pytest.raises(Crash):
        step(world, plan.steps[number - 1], journal.Action(dies, real.probe))


def status(world):
    return journal.journal_status(world["journal"], world["task"], world["plan"])


def objects(conn) -> list:
    """The tables and indexes the store holds: a read creates none."""
    if store.dialect(conn) is SQLITE:
        return conn.execute("SELECT name FROM sqlite_master").fetchall()
    return conn.execute("SELECT relname FROM pg_class"
                        " WHERE relnamespace = current_schema()::regnamespace"
                        ).fetchall()


def test_the_restock_plan_checks_the_drive_before_it_mails():
    plan = restock_plan()
    assert len(plan.steps) == STEPS
    assert [s.number for s in plan.steps if s.action == "rename"] == list(
        range(1, GATE))
    [gate] = [s for s in plan.steps if s.gate]
    assert (gate.number, gate.action, gate.irreversible) == (GATE, "verify_drive",
                                                              False)
    assert gate.args["names"] == {s.args["file_id"]: s.args["name"]
                                  for s in plan.steps if s.action == "rename"}
    assert tuple(s.number for s in plan.steps if s.irreversible) == MAILS
    assert first_irreversible(plan) == MAILS[0]


def test_a_whole_run_confirms_every_step(world):
    done = run(world)
    assert done == {"skip": 0, "probe": 0, "run": STEPS}
    assert status(world).summary() == {"confirmed": STEPS, "in_doubt": 0,
                                       "not_started": 0}
    gate = journal.entries(world["journal"], world["task"])[GATE - 1]
    assert (gate["action"], gate["outcome"]) == (
        "verify_drive", {"checked": 40, "problems": []})
    assert set(drive.names(world["drive"]).values()) == {
        f"invoice-2026-{i:03d}.pdf" for i in range(1, 41)}
    assert [m["status"] for m in mail.messages(world["mail"])] == ["queued"] * 2


def test_a_second_run_skips_everything_and_asks_nobody(world):
    run(world)
    assert run(world) == {"skip": STEPS, "probe": 0, "run": 0}
    with opened(world["drive"]) as drive_db:
        log = drive_db.execute("SELECT count(*) FROM rename_requests").fetchone()
    assert log[0] == 40
    assert len(mail.messages(world["mail"])) == 2


def test_killed_at_step_32_leaves_31_confirmed_1_in_doubt(world):
    crash_at(world, 32, act_first=False)
    seen = status(world)
    assert seen.summary() == {"confirmed": 31, "in_doubt": 1,
                              "not_started": STEPS - 32}
    assert seen.last_row == 32
    assert seen.irreversible_not_started == MAILS
    assert mail.messages(world["mail"]) == []  # the provider agrees


def test_in_doubt_and_not_done_is_cleared_and_run(world):
    crash_at(world, 5, act_first=False)
    done = run(world, **replacement(world))
    assert done == {"skip": 4, "probe": 0, "run": STEPS - 4}
    assert journal.resolutions(world["journal"], world["task"]) == {"run": STEPS,
                                                                  "probe": 0}
    assert drive.duplicate_requests(world["drive"]) == 0


def test_in_doubt_and_done_is_resolved_by_the_probe_not_repeated(world):
    crash_at(world, MAILS[0], act_first=True)  # the first mail was accepted
    done = run(world, **replacement(world))
    assert done == {"skip": MAILS[0] - 1, "probe": 1, "run": 1}
    assert journal.resolutions(world["journal"], world["task"])["probe"] == 1
    assert mail.duplicate_messages(world["mail"]) == 0
    assert len(mail.messages(world["mail"])) == 2


def test_the_schema_refuses_a_second_step_in_doubt(world):
    crash_at(world, 3, act_first=False)
    with pytest.raises(sqlite3.IntegrityError):
        world["journal"].execute(
            "INSERT INTO journal (task, step, operation_key, action, args,"
            " before_state) VALUES (:task, 4, 'k4', 'rename', '{}', '{}')",
            {"task": world["task"]},
        )


def test_before_state_is_what_the_probe_saw(world):
    crash_at(world, 2, act_first=False)
    row = world["journal"].execute(
        "SELECT before_state FROM journal WHERE step = 2").fetchone()
    assert '"name": "scan-002.pdf"' in row["before_state"]


def test_unknown_action_refused_before_anything_is_written(world):
    with pytest.raises(KeyError, match="send_mail"):
        run(world, {"rename": world["actions"]["rename"]})
    assert status(world).count("not_started") == STEPS


def test_a_gap_in_the_journal_is_reported(world):
    journal.install(world["journal"])
    world["journal"].execute(
        "INSERT INTO journal (task, step, operation_key, action, args,"
        " before_state, outcome) VALUES (:task, 3, 'k3', 'rename', '{}', '{}', '{}')",
        {"task": world["task"]},
    )
    with pytest.raises(ValueError, match="gaps"):
        status(world)


def test_the_stored_plan_comes_back_and_a_changed_plan_is_a_new_task(world):
    plan = world["plan"]
    assert load_plan(world["journal"], world["task"]) == plan
    assert save_plan(world["journal"], plan) == world["task"]
    other = restock_plan(renames=39)
    assert other.task != plan.task
    with pytest.raises(UnknownTask):
        load_plan(world["journal"], "restock-000000000000")


@sqlite_only
def test_a_plan_stored_with_other_steps_is_refused(world):
    columns = {row[1] for row in world["journal"].execute("PRAGMA table_info(plans)")}
    world["journal"].execute(  # a plan kept as one body, or a row per step
        "UPDATE plans SET body = '{}'" if "body" in columns
        else "UPDATE plan_steps SET step = '{}' WHERE number = 1")
    with pytest.raises(PlanChanged):
        save_plan(world["journal"], world["plan"])


def test_order_plan_puts_gates_then_irreversible_steps_last():
    mixed = [Step(0, "send_mail", {"to": "a@x"}, irreversible=True),
             Step(0, "rename", {"file_id": "f1"}),
             Step(0, "check", {}, gate=True),
             Step(0, "rename", {"file_id": "f2"})]
    plan = order_plan("mixed", mixed)
    assert [s.action for s in plan.steps] == ["rename", "rename", "check",
                                              "send_mail"]
    assert [s.args.get("file_id") for s in plan.steps[:2]] == ["f1", "f2"]
    assert [s.number for s in plan.steps] == [1, 2, 3, 4]
    assert first_irreversible(plan) == 4


def test_make_plan_refuses_misnumbered_steps():
    with pytest.raises(ValueError, match="step 3"):
        make_plan("bad", [Step(1, "rename", {}), Step(3, "rename", {})])
    with pytest.raises(ValueError):
        make_plan("not an identifier", [])


def test_each_step_carries_the_effects_operation_key(world):
    crash_at(world, MAILS[0], act_first=True)  # the first mail was accepted
    step = world["plan"].steps[MAILS[0] - 1]
    key = operation_key(world["task"], step.number, step.action, step.args)
    row = world["journal"].execute(
        "SELECT operation_key FROM journal WHERE step = :step",
        {"step": MAILS[0]}).fetchone()
    assert row["operation_key"] == key
    assert [m["operation_key"] for m in mail.messages(world["mail"])] == [key]
    assert mail.probe_sent(world["mail"], key)[0] is True
    assert not hasattr(journal, "op_key")


def test_reads_on_a_fresh_file_create_nothing(store_at):
    plan = restock_plan()
    with opened(store_at("fresh")) as conn:
        seen = journal.journal_status(conn, plan.task, plan)
        assert seen.summary() == {"confirmed": 0, "in_doubt": 0,
                                  "not_started": STEPS}
        assert seen.last_row == 0 and seen.irreversible_not_started == MAILS
        assert journal.resolutions(conn, plan.task) == {"run": 0, "probe": 0}
        with pytest.raises(UnknownTask):
            load_plan(conn, plan.task)
        tables = objects(conn)
    assert tables == []  # no install: a read never creates a table


def read_only(path):
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


@sqlite_only
def test_status_and_plan_read_on_a_read_only_connection(world):
    crash_at(world, 32, act_first=False)
    conn = read_only(world["where"]["journal"])
    try:
        assert load_plan(conn, world["task"]) == world["plan"]
        seen = journal.journal_status(conn, world["task"], world["plan"])
        assert seen.summary() == {"confirmed": 31, "in_doubt": 1,
                                  "not_started": STEPS - 32}
    finally:
        conn.close()


@sqlite_only
def test_reads_do_not_wait_for_a_writer_holding_the_lock(world):
    crash_at(world, 5, act_first=False)
    path = world["where"]["journal"]
    with opened(path, busy_timeout_ms=50) as reader, immediate(world["journal"]):
        # a write would wait 50 ms, then fail "database is locked"
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            reader.execute("BEGIN IMMEDIATE")
        assert load_plan(reader, world["task"]) == world["plan"]
        seen = journal.journal_status(reader, world["task"], world["plan"])
        assert (seen.count("confirmed"), seen.last_row) == (4, 5)
        assert journal.resolutions(reader, world["task"]) == {"run": 4, "probe": 0}


# --- one commit per step (issue 11) ---------------------------------------------


WRITES = ("INSERT", "UPDATE", "DELETE", "CREATE")


def commits_of(conn, *, reads: list | None = None,
               alone: list | None = None) -> list:
    """A list that fills with one entry per COMMIT run on ``conn`` of a
    transaction that wrote (an INSERT, UPDATE, DELETE or CREATE since its
    BEGIN); ``reads`` gets one per COMMIT of a transaction that wrote none,
    ``alone`` every statement run outside a transaction."""
    wrote, inside = [False], [False]

    def trace(sql: str) -> None:
        verb = sql.split(None, 1)[0].upper() if sql.strip() else ""
        if verb == "BEGIN":
            wrote[0], inside[0] = False, True
        elif verb in ("COMMIT", "ROLLBACK"):
            inside[0] = False
            if verb == "COMMIT":
                (seen if wrote[0] else reads if reads is not None else []
                 ).append(sql)
        elif not inside[0] and alone is not None:
            alone.append(sql)
        elif verb in WRITES:
            wrote[0] = True

    seen = []
    conn.set_trace_callback(trace)
    return seen


@sqlite_only
def test_a_run_commits_once_per_step(world):
    reads, alone = [], []
    commits = commits_of(world["journal"], reads=reads, alone=alone)
    run(world)
    world["journal"].set_trace_callback(None)
    # install, one per step (its intent with the previous outcome), the last alone
    assert len(commits) == 1 + STEPS + 1
    assert reads == []  # no transaction that writes nothing: no lock taken for it
    # the admissions: one read each, outside any transaction (a snapshot)
    assert sum(sql.startswith(fence.HOLDER[:40]) for sql in alone) == STEPS
    assert status(world).summary() == {"confirmed": STEPS, "in_doubt": 0,
                                       "not_started": 0}


@sqlite_only
@pytest.mark.parametrize("level, pages", [("FULL", 100), ("EXTRA", 100),
                                          ("NORMAL", 1000)])
def test_a_run_in_full_checkpoints_its_wal_early_and_one_in_normal_does_not(
        tmp_path, level, pages):
    """Bug: ``wal_wraps_early`` left out (every step of a fresh worker's run
    syncs a growing ``-wal``, its size too), or run in NORMAL too (where a
    checkpoint is the only sync, ten times as many of them). The 100 pages
    are the number issue 24's measurements were taken with (bench/results):
    written out, not read back from ``CHECKPOINT_PAGES``."""
    plan = make_plan("tiny", [Step(1, "touch", {"i": 1})])
    touch = journal.Action(lambda args, key: {}, lambda args, key: (False, {}))
    with opened(tmp_path / "journal.sqlite", synchronous=level) as conn:
        journal.install(conn)
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        journal.run_task(conn, save_plan(conn, plan), plan, {"touch": touch},
                         owner="w", ttl=5)
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == pages


def test_a_run_told_no_lease_holds_one_of_three_seconds(tmp_path):
    """Bug: ``DEFAULT_TTL_S`` changed: chapter 13 reports the journal
    worker's own lease, unless told otherwise, as 3 s, and the checkpoints
    wait leases of that length out. Read from the work row while the step
    acts, on an injected clock."""
    plan = make_plan("tiny", [Step(1, "touch", {"i": 1})])
    at, seen = 1_796_000_000.0, []
    with opened(tmp_path / "journal.sqlite") as conn:
        journal.install(conn)
        task = save_plan(conn, plan)

        def execute(args, key):
            seen.append(journal.holder(conn, task)["expires"] - at)
            return {}

        touch = journal.Action(execute, lambda args, key: (False, {}))
        journal.run_task(conn, task, plan, {"touch": touch}, owner="w", now=at)
    assert seen == [3.0]


@sqlite_only
def test_a_step_run_alone_still_commits_its_own_outcome(world):
    journal.install(world["journal"])
    commits = commits_of(world["journal"])
    assert step(world, world["plan"].steps[0],
                world["actions"]["rename"]) == journal.RUN
    world["journal"].set_trace_callback(None)
    assert len(commits) == 2
    assert status(world).count("confirmed") == 1


def watched(world, seen: list, reader) -> dict:
    """The restock actions, each noting what a second connection, ``reader``,
    reads in the journal while the step acts (its intent committed) and
    before it (each of its reads sees every commit made before it)."""

    def look(when: str, args: dict, key: str) -> None:
        now = journal.journal_status(reader, world["task"], world["plan"])
        seen.append((when, int(key.split("/")[1]), now.summary()["confirmed"],
                     now.count("in_doubt"), now.last_row))

    def wrap(action):
        def execute(args, key):
            look("acting", args, key)
            return action.execute(args, key)

        def probe(args, key):
            look("probing", args, key)
            return action.probe(args, key)

        return journal.Action(execute, probe, action.restore)

    return {name: wrap(action) for name, action in world["actions"].items()}


def test_while_a_step_acts_it_alone_is_in_doubt(world):
    seen = []
    with opened(world["where"]["journal"]) as reader:
        run(world, watched(world, seen, reader))
    acting = [(step, confirmed, doubt, last) for when, step, confirmed, doubt, last
              in seen if when == "acting"]
    # while step N acts: N-1 confirmed (it rode with N's intent), N in doubt
    assert acting == [(n, n - 1, 1, n) for n in range(1, STEPS + 1)]
    # before step N's intent (its probe): the held outcome of N-1 reads in doubt
    before = [(step, doubt, last) for when, step, _, doubt, last in seen
              if when == "probing" and last == step - 1]
    assert before and all(doubt == (step > 1) for step, doubt, last in before)
    assert max(doubt for *_, doubt, _ in seen) == 1


def test_the_held_outcome_is_written_when_the_next_probe_fails(world):
    rename = world["actions"]["rename"]

    def probe(args, key):
        if args["file_id"] == "f006":
            raise Crash  # the drive did not answer
        return rename.probe(args, key)

    actions = {**world["actions"], "rename": journal.Action(rename.execute, probe)}
    with pytest.raises(Crash):
        run(world, actions)
    assert status(world).summary() == {"confirmed": 5, "in_doubt": 0,
                                       "not_started": STEPS - 5}


def test_a_stop_is_asked_with_every_earlier_outcome_in_the_journal(world):
    asked = []

    def stop() -> bool:
        asked.append(status(world).summary())
        return len(asked) > 12

    done = run(world, should_stop=stop)
    assert done == {"skip": 0, "probe": 0, "run": 12, journal.STOPPED_BEFORE: 13}
    # ask N (before step N acts) sees steps 1..N-1 confirmed
    assert [a["confirmed"] for a in asked] == list(range(13))
    assert status(world).summary() == {"confirmed": 12, "in_doubt": 0,
                                       "not_started": STEPS - 12}


def opcodes(conn, read) -> int:
    """How many SQLite virtual-machine steps ``read(conn)`` takes: a count,
    not a timing, of how much of the journal it reads."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(tick, 1)
    try:
        read(conn)
    finally:
        conn.set_progress_handler(None, 1)
    return steps[0]


def long_journal(path, steps: int) -> str:
    plan = make_plan("long", [Step(n, "touch", {"n": n}) for n in range(1, steps + 1)])
    with opened(path) as conn:
        task = save_plan(conn, plan)
        journal.install(conn)
        with immediate(conn):
            conn.executemany(
                "INSERT INTO journal (task, step, operation_key, action, args,"
                " before_state, outcome) VALUES (:task, :n, :key, 'touch', '{}',"
                " '{}', :outcome)",
                [{"task": task, "n": n, "key": f"{task}/{n}",
                  "outcome": None if n == steps else "{}"}  # the last in doubt
                 for n in range(1, steps + 1)])
    return task


def test_where_to_resume_costs_the_same_for_10_rows_and_10000(tmp_path):
    counted = {}
    for steps in (10, 10_000):
        task = long_journal(tmp_path / f"{steps}.sqlite", steps)
        with opened(tmp_path / f"{steps}.sqlite") as conn:
            assert journal.confirmed_count(conn, task) == steps - 1
            counted[steps] = opcodes(
                conn, lambda c, task=task: journal.confirmed_count(c, task))
            everything = opcodes(conn, lambda c, task=task: c.execute(
                "SELECT count(*) FROM journal WHERE task = :task",
                {"task": task}).fetchone())
    assert counted[10_000] == counted[10]
    assert everything > 100 * counted[10_000]  # a count would read every row


KILLED_AT = [  # (step, boundary) -> confirmed, in doubt, as journal.py says
    ((1, "before_intent"), (0, 0)),
    ((5, "before_intent"), (3, 1)),
    ((5, "after_intent"), (4, 1)),
    ((5, "after_action"), (4, 1)),
    ((5, "after_outcome"), (4, 1)),
    ((STEPS, "after_outcome"), (STEPS - 1, 1)),
]


@pytest.mark.parametrize(("point", "expected"), KILLED_AT,
                         ids=[f"{s}-{b}" for (s, b), _ in KILLED_AT])
def test_a_real_kill_leaves_the_journal_where_the_boundary_says(tmp_path, point,
                                                                expected):
    from crashcourse.lab.harness import Harness

    task = build_world(str(tmp_path), restock_plan())
    number, phase = point
    worker_args = ["-m", "crashcourse.workers.journal_worker", "--dir",
                   str(tmp_path), "--task", task, "--ttl", "1", "--wait", "0.3"]
    with Harness() as harness:
        worker = harness.start(worker_args, stop_at=f"step-{number}:{phase}")
        worker.wait_for_boundary()
        assert worker.kill().returncode == -9
        with opened(paths(str(tmp_path))["journal"]) as conn:
            seen = journal.journal_status(conn, task, restock_plan())
            journal.wait_out(conn, task)  # the killed holder's lease runs out
        assert (seen.count("confirmed"), seen.count("in_doubt")) == expected
        resumed = harness.run(worker_args)
    assert resumed.returncode == 0, resumed.stderr
    with opened(paths(str(tmp_path))["journal"]) as conn:
        assert journal.journal_status(conn, task, restock_plan()).count(
            "confirmed") == STEPS
    assert drive.duplicate_requests(paths(str(tmp_path))["drive"]) == 0
    assert mail.duplicate_messages(paths(str(tmp_path))["mail"]) == 0


# --- the probe before the intent (issue 14) ---------------------------------------


def counting(world, name: str) -> tuple[journal.Action, list]:
    """The restock action ``name``, noting each time it is performed."""
    real, performed = world["actions"][name], []

    def execute(args, key):
        performed.append(key)
        return real.execute(args, key)

    return journal.Action(execute, real.probe, real.restore), performed


def test_a_step_the_target_already_shows_done_is_recorded_not_performed(world):
    # The rename happened and the journal forgot it (a lost tail): no row.
    drive.rename_to(world["drive"], "f001", "invoice-2026-001.pdf")
    journal.install(world["journal"])
    rename, performed = counting(world, "rename")
    first = world["plan"].steps[0]
    assert step(world, first, rename) == journal.PROBE
    assert performed == []
    [row] = journal.entries(world["journal"], world["task"])
    assert (row["resolved_by"], row["outcome"]) == (
        "probe", {"file_id": "f001", "name": "invoice-2026-001.pdf"})
    assert row["operation_key"] == operation_key(world["task"], 1, "rename",
                                                 first.args)
    assert drive.duplicate_requests(world["drive"]) == 0


def test_a_mail_the_provider_holds_is_not_sent_again_by_a_forgetful_journal(world):
    run(world)
    world["journal"].execute("DELETE FROM journal")  # every row lost, mails out
    send, performed = counting(world, "send_mail")
    done = run(world, {**world["actions"], "send_mail": send})
    # every rename and both mails found at their targets; the gate still runs
    assert done == {"skip": 0, "probe": STEPS - 1, "run": 1}
    assert performed == []
    assert len(mail.messages(world["mail"])) == len(MAILS)
    assert status(world).summary()["confirmed"] == STEPS


@sqlite_only
def test_a_step_found_done_costs_no_extra_commit(world):
    for n in (2, 4, 6):  # each right after a step whose outcome is held
        drive.rename_to(world["drive"], f"f{n:03d}", f"invoice-2026-{n:03d}.pdf")
    commits = commits_of(world["journal"])
    done = run(world)
    world["journal"].set_trace_callback(None)
    assert done == {"skip": 0, "probe": 3, "run": STEPS - 3}
    assert len(commits) == 1 + STEPS + 1  # install, one per step, the last alone


# --- the door: bad input raises, nothing is written or run (issue 14) ---------------

NAN, INF = float("nan"), float("inf")
BAD_STEPS = [
    (Step(-1, "rename", {"file_id": "f001", "name": "x.pdf"}), ValueError),
    (Step(0, "rename", {"file_id": "f001", "name": "x.pdf"}), ValueError),
    (Step(1.5, "rename", {"file_id": "f001", "name": "x.pdf"}), TypeError),
    (Step(True, "rename", {"file_id": "f001", "name": "x.pdf"}), TypeError),
    (Step("1", "rename", {"file_id": "f001", "name": "x.pdf"}), TypeError),
    (Step(1, "rename", {"file_id": "f001", "name": "x.pdf", "n": NAN}), ValueError),
    (Step(1, "rename", {"file_id": "f001", "name": "x.pdf", "n": [INF]}), ValueError),
    (Step(1, "rename", {"file_id": "f001", "name": "x.pdf", "n": -INF}), ValueError),
    (Step(1, " ", {"file_id": "f001", "name": "x.pdf"}), ValueError),
    (Step(1, "rename", [("file_id", "f001")]), TypeError),
    (Step(1, "rename", {"file_id": "f001", "name": "x.pdf"}, "false"), TypeError),
    (("1", "rename", {"file_id": "f001", "name": "x.pdf"}), TypeError),
]
BAD_STEP_IDS = ["minus-one", "zero", "one-and-a-half", "True", "str", "NaN", "inf",
                "minus-inf", "blank-action", "args-not-a-dict", "flag-false-string",
                "not-a-Step"]


def nothing_done(world, performed: list) -> None:
    assert performed == []
    assert journal.entries(world["journal"], world["task"]) == []
    assert drive.duplicate_requests(world["drive"]) == 0
    with opened(world["drive"]) as drive_db:
        assert drive_db.execute("SELECT count(*) FROM rename_requests"
                                ).fetchone()[0] == 0


@sqlite_only  # refused before the store is touched: the same on any backend
@pytest.mark.parametrize(("bad", "error"), BAD_STEPS, ids=BAD_STEP_IDS)
def test_run_step_refuses_a_bad_step_before_anything(world, bad, error):
    journal.install(world["journal"])
    rename, performed = counting(world, "rename")
    asked = []
    probe = journal.Action(rename.execute,
                           lambda args, key: asked.append(key) or (False, {}))
    with pytest.raises(error):
        step(world, bad, probe)
    assert asked == []
    nothing_done(world, performed)
    with pytest.raises(error):
        journal.probe_gate(world["task"], bad, probe)
    assert asked == []


@sqlite_only
@pytest.mark.parametrize("task", ["", "   ", None, 7], ids=["empty", "blank",
                                                          "None", "int"])
def test_every_entry_refuses_a_blank_task_and_writes_nothing(tmp_path, world, task):
    fresh = tmp_path / "fresh.sqlite"
    rename, performed = counting(world, "rename")
    first, plan, claim = world["plan"].steps[0], world["plan"], world["claim"]
    with opened(fresh) as conn:
        for call in (lambda: journal.run_plan(conn, task, plan, world["actions"],
                                              claim),
                     lambda: journal.run_step(conn, task, first, rename, claim),
                     lambda: journal.Pending(conn, task, claim),
                     lambda: journal.claim_task(conn, task, "w", ttl=5),
                     lambda: journal.probe_gate(task, first, rename),
                     lambda: journal.confirmed_count(conn, task),
                     lambda: journal.journal_status(conn, task, plan),
                     lambda: journal.entries(conn, task),
                     lambda: journal.resolutions(conn, task)):
            with pytest.raises((ValueError, TypeError), match="task"):
                call()
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []
    assert performed == []


@sqlite_only
def test_run_plan_refuses_a_bad_step_anywhere_before_the_first_write(world):
    good = [Step(n, "rename", {"file_id": f"f{n:03d}",
                               "name": f"invoice-2026-{n:03d}.pdf"})
            for n in range(1, 6)]
    nan_last = make_plan("nan_last", [*good[:4], good[4]._replace(
        args={**good[4].args, "copies": NAN})])
    blank = make_plan("blank", [*good[:4], Step(5, " ", {})])  # " " registered
    skips = Plan("skips", (good[0], good[2]))  # 1 then 3: not a made plan
    rename, performed = counting(world, "rename")
    commits = commits_of(world["journal"])
    claim = world["claim"]
    for plan in (nan_last, blank, skips):
        with pytest.raises(ValueError, match="step"):
            journal.run_plan(world["journal"], plan.task, plan,
                             {"rename": rename, " ": rename}, claim)
    fine = make_plan("fine", good)
    with pytest.raises(TypeError, match="execute and probe"):
        journal.run_plan(world["journal"], fine.task, fine,
                         {"rename": journal.Action(rename.execute, None)}, claim)
    with pytest.raises(TypeError, match="Plan"):
        journal.run_plan(world["journal"], world["task"], list(good),
                         {"rename": rename}, claim)
    with pytest.raises(ValueError, match="not on task"):  # another task's claim
        journal.run_plan(world["journal"], fine.task, fine, {"rename": rename},
                         claim)
    world["journal"].set_trace_callback(None)
    assert (performed, commits) == ([], [])
    assert drive.names(world["drive"])["f001"] == "scan-001.pdf"


# --- a journal that lost its tail (issue 14): it asks the world before it acts
# again (was tests/test_no_silent_loss.py) ----------------------------------


def journal_rows(path: str) -> int:
    """Rows the journal holds, read WITHOUT folding its -wal into the file: a
    read-only connection cannot checkpoint, so reading changes nothing."""
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return reader.execute("SELECT count(*) FROM journal").fetchone()[0]
    finally:
        reader.close()


def test_a_lost_wal_does_not_send_the_mail_twice(tmp_path):
    folder = str(tmp_path)
    plan = restock_plan()
    renames = [s.number for s in plan.steps if s.action == "rename"]  # 1..40
    task, where = build_world(folder, plan), paths(folder)
    worker = ["-m", "crashcourse.workers.journal_worker", "--dir", folder,
              "--task", task]
    at_start = journal_rows(where["journal"])  # what the file held: the plan only
    with Harness() as harness:
        first = harness.start(worker, stop_at=f"step-{MAILS[0]}:after_action")
        first.wait_for_boundary()
        assert first.kill().returncode == -9
        assert journal_rows(where["journal"]) == MAILS[0]  # one commit per step
        assert len(mail.messages(where["mail"])) == 1  # the first mail is out
        os.remove(where["journal"] + "-wal")  # the lost tail
        assert journal_rows(where["journal"]) == at_start == 0
        resumed = harness.run(worker)
    assert resumed.returncode == 0, resumed.stderr
    sent = [int(m["operation_key"].split("/")[1]) for m in mail.messages(where["mail"])]
    assert sent == list(MAILS)  # one message per mail step, not two for the first
    # every rename and the first mail found at their targets, the gate and
    # the second mail run
    assert json.loads(resumed.stdout) == {"skip": 0, "probe": len(renames) + 1,
                                          "run": 2}
    assert mail.duplicate_messages(where["mail"]) == 0
    assert drive.duplicate_requests(where["drive"]) == 0
    with sqlite3.connect(where["journal"]) as conn:
        conn.row_factory = sqlite3.Row
        assert journal.resolutions(conn, task) == {"run": 2,
                                                   "probe": len(renames) + 1}
        assert journal.journal_status(conn, task, plan).count("confirmed") == len(
            plan.steps)
    conn.close()


def test_a_failing_gate_stops_the_run_with_nothing_in_doubt(world):
    """Bug: ``run_plan`` does not ask a gate's probe before the gate's
    intent: a failing verification is written as a step in doubt (or run as
    if passed) and the irreversible mails after it may go out. The gate is
    asked first: ``GateFailed``, no row for it, no mail."""
    failing = world["actions"]["verify_drive"]._replace(
        probe=lambda args, key: (False, {"seen": "a file the plan did not name"}))
    actions = {**world["actions"], "verify_drive": failing}
    with pytest.raises(GateFailed):
        run(world, actions)
    entries = journal.entries(world["journal"], world["task"])
    assert [e["step"] for e in entries] == list(range(1, GATE))
    assert all(e["outcome"] is not None for e in entries)
    assert mail.messages(world["mail"]) == []


@pytest.mark.parametrize("probe, done", [("correct", False), ("filename-only", True)])
def test_the_worker_s_correct_probe_asks_about_its_own_file(tmp_path, probe, done):
    """Bug: ``restock_actions`` binds the probes the wrong way round: the
    worker's ``--probe correct`` asks whether ANY file has the name, and a
    supplier's file of that name passes a rename that never happened as
    done (chapter 07's campaign keeps that probe as its wrong one)."""
    where = {"drive": str(tmp_path / "drive.sqlite"),
             "mail": str(tmp_path / "mail.sqlite")}
    drive.install(where["drive"], {"f001": "scan-001.pdf"})
    drive.install(where["drive"], {"supplier-1": "invoice-001.pdf"}, owner="supplier")
    rename = restock_actions(where["drive"], where["mail"], probe)["rename"]
    found, _ = rename.probe({"file_id": "f001", "name": "invoice-001.pdf"}, "k")
    assert found is done


def test_the_worker_s_unwind_of_a_rename_refuses_a_name_changed_since(tmp_path):
    """Bug: the journal worker's ``rename_back`` swallows ``drive.NameChanged``
    instead of raising ``decisions.ChangedSince``: an unwind then reads as
    done while the file carries a name someone gave it since, which the
    unwind must neither overwrite nor hide (chapter 09)."""
    from crashcourse.journal import decisions

    where = {"drive": str(tmp_path / "drive.sqlite"),
             "mail": str(tmp_path / "mail.sqlite")}
    drive.install(where["drive"], {"f001": "scan-001.pdf"})
    rename = restock_actions(where["drive"], where["mail"])["rename"]
    args = {"file_id": "f001", "name": "invoice-001.pdf"}
    rename.execute(args, "task/1/rename/k")
    drive.rename_to(where["drive"], "f001", "kept-by-owner.pdf")  # a change since
    with pytest.raises(decisions.ChangedSince):
        rename.restore(args, {"name": "scan-001.pdf"}, "task/1/rename/undo")
    assert drive.names(where["drive"])["f001"] == "kept-by-owner.pdf"
