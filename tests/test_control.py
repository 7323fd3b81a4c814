"""Stopping (chapter 09): the pause flag, the scheduler switch, the journal's
in-band stop, gates, and the person's three decisions.

In-process where the lesson is a rule over rows; real worker processes where
it is about what a running process does (the worker that honours the flag,
the hand-over's command run as it is written). The rules over rows run on
both backends (``store_at``: a SQLite file, a PostgreSQL schema, chapter 10),
the person's decisions too; the worker processes on SQLite files.
"""

from __future__ import annotations

import json
import shlex
import time

import pytest

from crashcourse import claims, control, journal, store
from crashcourse.claims import fence
from crashcourse.journal import decisions
from crashcourse.journal.plan import GateFailed, save_plan
from crashcourse.lab.example import restock_plan
from crashcourse.lab.harness import Harness
from crashcourse.services import broker, drive, mail
from crashcourse.store import count_rows, opened
from crashcourse.store.dialect import SQLITE
from crashcourse.workers.journal_worker import (
    build_world,
    paths,
    restock_actions,
    resume_command,
)
from tests.lock_probe import second_writer_got_in

WORKER = ["-m", "crashcourse.workers.journal_worker"]
STEPS = 43
SCANS = {f"f{i:03d}": f"scan-{i:03d}.pdf" for i in range(1, 41)}


# ``conn`` (conftest): a fresh, empty store on each backend.
sqlite_only = pytest.mark.sqlite_only("about files and real worker processes")


def objects(conn) -> int:
    """How many tables and indexes the store holds: a read creates none."""
    if store.dialect(conn) is SQLITE:
        return conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    return conn.execute("SELECT count(*) FROM pg_class"
                        " WHERE relnamespace = current_schema()::regnamespace"
                        ).fetchone()[0]


@pytest.fixture
def world(tmp_path, backend, store_at):
    """The restock plan (43 steps: 40 renames, the gate 41, mails 42-43); the
    journal in the backend's store, the drive and the mail in their files."""
    plan = restock_plan()
    task = build_world(str(tmp_path), plan)
    where = paths(str(tmp_path))
    if backend != "sqlite":
        where["journal"] = store_at("journal")
        with opened(where["journal"]) as jc:
            save_plan(jc, plan)
            journal.install(jc)
    with opened(where["journal"]) as jc:
        yield {"journal": jc, "plan": plan, "task": task, "where": where,
               "dir": str(tmp_path),
               "actions": restock_actions(where["drive"], where["mail"])}


def status(world):
    return journal.journal_status(world["journal"], world["task"], world["plan"])


def run(world, **options):
    """A run as the worker makes one: claim the task, run, give the lease back."""
    return journal.run_task(world["journal"], world["task"], world["plan"],
                            world["actions"], owner="test", ttl=60, **options)


def collide(world, name="invoice-2026-007.pdf"):
    """Someone else files a document under a name the plan gives."""
    drive.install(world["where"]["drive"], {"supplier-7": name}, "supplier")


# --- the pause flag -------------------------------------------------------------


def test_the_pause_flag_reads_without_creating_and_defaults_to_not_paused(conn):
    assert control.is_paused(conn) is False
    assert objects(conn) == 0
    control.set_paused(conn, True)
    assert control.is_paused(conn) is True
    assert control.runtime(conn)["changed_at"] is not None
    control.set_paused(conn, False)
    assert control.is_paused(conn) is False


def test_a_bad_pause_value_is_refused_and_nothing_written(conn):
    with pytest.raises(TypeError):
        control.set_paused(conn, 1)
    assert objects(conn) == 0


def test_claims_honour_the_flag_from_control_and_resume_when_it_is_lifted(conn):
    fence.install(conn)
    claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    control.set_paused(conn, True)
    assert claims.claim(conn, "w", ttl=5) is None
    control.set_paused(conn, False)
    claim = claims.claim(conn, "w", ttl=5)
    assert claim is not None and claim.generation == 1
    control.set_paused(conn, True)
    with pytest.raises(fence.StaleClaim, match="paused"):
        fence.observe(conn, claim, {"text": "while paused"})
    assert fence.transcript(conn, claim.id) == []


def test_a_worker_installing_while_paused_leaves_the_flag_set(conn):
    control.set_paused(conn, True)
    epoch = control.runtime(conn)["epoch"]
    fence.install(conn)  # what a worker starting meanwhile does first
    assert control.is_paused(conn) is True
    assert control.runtime(conn)["epoch"] == epoch


# --- the scheduler switch -------------------------------------------------------


def test_nobody_has_looked_so_the_scheduler_stays_stopped(conn):
    assert control.scheduler_may_run(conn) is False
    assert control.start_run(conn, "s1") is None
    assert control.snapshot(conn)["runs"] == []


def test_stop_and_start_are_rows_and_the_newest_rules(conn):
    started = control.start_scheduler(conn, "sam")
    run_id = control.start_run(conn, "s1")
    stopped = control.stop_scheduler(conn, "sam", "supplier sync misbehaving")
    assert control.start_run(conn, "s1") is None
    assert control.scheduler_may_run(conn) is False
    rows = control.snapshot(conn)
    assert [(r["seq"], r["state"]) for r in rows["scheduler_switch"]] == [
        (started, "running"), (stopped, "stopped")]
    assert [(r["run_id"], r["allowed_by"]) for r in rows["runs"]] == [
        (run_id, started)]


@pytest.mark.parametrize("who, reason", [("", "why"), ("sam", ""), ("sam", None),
                                         (None, "why")])
def test_a_stop_without_who_or_why_is_refused_and_nothing_written(conn, who, reason):
    with pytest.raises(ValueError):
        control.stop_scheduler(conn, who, reason)
    assert control.snapshot(conn)["scheduler_switch"] == []


def test_every_row_keeps_its_instant_to_the_microsecond(conn):
    """Leases are compared with these instants: a 4-byte REAL (PostgreSQL's)
    would round an epoch to 128 s."""
    at = 1_796_000_000.123456
    control.start_scheduler(conn, "sam", now=at)
    control.start_run(conn, "s1", now=at + 0.25)
    before = store.now(conn)
    control.set_paused(conn, True)
    rows = control.snapshot(conn)
    assert rows["scheduler_switch"][0]["at"] == at
    assert rows["runs"][0]["started_at"] == at + 0.25
    assert before <= rows["runtime_control"][0]["changed_at"] <= store.now(conn)


# --- the journal's in-band stop and its gates -----------------------------------


def test_a_stop_ends_the_run_at_a_step_boundary_with_nothing_in_doubt(world):
    asked = []

    def stop_after_twelve() -> bool:
        asked.append(1)
        return len(asked) > 12

    done = run(world, should_stop=stop_after_twelve)
    assert done == {"skip": 0, "probe": 0, "run": 12, journal.STOPPED_BEFORE: 13}
    assert status(world).summary() == {"confirmed": 12, "in_doubt": 0,
                                       "not_started": 31}
    assert run(world) == {"skip": 12, "probe": 0, "run": 31}  # no key: finished
    assert drive.duplicate_requests(world["where"]["drive"]) == 0


def test_a_failing_gate_writes_no_row_and_sends_nothing(world):
    collide(world)
    with pytest.raises(GateFailed) as failed:
        run(world)
    assert failed.value.step == 41
    assert failed.value.observed["problems"] == [
        "supplier-7 is already called invoice-2026-007.pdf"]
    assert status(world).summary() == {"confirmed": 40, "in_doubt": 0,
                                       "not_started": 3}
    assert mail.messages(world["where"]["mail"]) == []


def test_a_passing_gate_is_a_journal_step_like_any_other(world):
    assert run(world) == {"skip": 0, "probe": 0, "run": 43}
    gate = journal.entries(world["journal"], world["task"])[40]
    assert (gate["action"], gate["outcome"]) == (
        "verify_drive", {"checked": 40, "problems": []})


@sqlite_only
@pytest.mark.parametrize(("held_at", "renamed"), [("after_intent", 11),
                                                  ("admitted", 12)])
def test_the_worker_honours_the_flag_at_the_next_step_boundary(world, held_at,
                                                               renamed):
    """A real worker held inside step 12, paused, released. Held after its
    intent, its admission finds the flag: step 12's intent is withdrawn and
    nothing more is renamed. Held after its admission, the request is on its
    way: step 12 is done, its outcome recorded (history, not a new effect),
    and the run stops before 13. Either way nothing is left in doubt."""
    args = [*WORKER, "--dir", world["dir"], "--task", world["task"]]
    with Harness() as harness:
        worker = harness.start(args, stop_at=f"step-12:{held_at}")
        worker.wait_for_boundary()
        control.set_paused(world["journal"], True)
        worker.release()
        finished = worker.finish()
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout)[journal.STOPPED_BEFORE] == renamed + 1
    assert status(world).summary() == {"confirmed": renamed, "in_doubt": 0,
                                       "not_started": STEPS - renamed}
    with opened(world["where"]["drive"]) as drive_db:
        assert count_rows(drive_db, "rename_requests") == renamed


# --- the person's decisions -----------------------------------------------------


def test_resume_rechecks_the_gates_first_and_refuses_when_one_fails(world):
    run(world, should_stop=lambda: status(world).count("confirmed") >= 41)
    collide(world)  # the drive changed while the task was stopped
    with pytest.raises(GateFailed):
        decisions.resume(world["journal"], world["task"], world["actions"],
                         who="sam")
    assert decisions.history(world["journal"], world["task"]) == []
    assert mail.messages(world["where"]["mail"]) == []


def test_resume_lifts_the_pause_and_finishes_the_plan(world):
    control.set_paused(world["journal"], True)
    paused = run(world, should_stop=lambda: control.is_paused(world["journal"]))
    assert paused == {"skip": 0, "probe": 0, "run": 0, journal.STOPPED_BEFORE: 1}
    result = decisions.resume(world["journal"], world["task"], world["actions"],
                              who="sam")
    assert sorted(result["gates"]) == [41]
    assert result["done"] == {"skip": 0, "probe": 0, "run": 43}
    assert control.is_paused(world["journal"]) is False
    [decided] = decisions.history(world["journal"], world["task"])
    assert (decided["decision"], decided["who"]) == ("resume", "sam")
    assert decided["detail"]["gates_passed"] == [41]


def test_unwind_restores_renames_newest_first_and_records_sent_mail(world):
    run(world, should_stop=lambda: status(world).count("confirmed") >= 42)
    actions = world["actions"]
    result = decisions.unwind(world["journal"], world["task"], actions, who="sam")
    assert result == {"restore": list(range(40, 0, -1)), "compensation": [42],
                      "left_as_found": [], "not_performed": []}
    assert drive.names(world["where"]["drive"]) == SCANS
    undone = decisions.unwinds(world["journal"], world["task"])
    assert [u["kind"] for u in undone] == ["compensation"] + ["restore"] * 40
    keys = {e["operation_key"] for e in journal.entries(world["journal"],
                                                        world["task"])}
    assert keys.isdisjoint(u["operation_key"] for u in undone)  # their own keys
    assert undone[0]["outcome"]["cannot_undo"] == "send_mail"
    with opened(world["where"]["drive"]) as drive_db:
        requests = count_rows(drive_db, "rename_requests")
    again = decisions.unwind(world["journal"], world["task"], actions, who="sam")
    assert again == result
    with opened(world["where"]["drive"]) as drive_db:
        assert count_rows(drive_db, "rename_requests") == requests  # none repeated
    with pytest.raises(decisions.DecisionRefused):
        decisions.resume(world["journal"], world["task"], actions, who="sam")


def test_unwind_settles_the_step_in_doubt_with_its_probe(world):
    run(world, should_stop=lambda: status(world).count("confirmed") >= 5)
    rename = world["actions"]["rename"]

    def dies(args, key):
        raise RuntimeError("killed after the intent, before the rename")

    then = time.time() - 10  # a holder that died ten seconds ago: its lease is over
    claim = journal.claim_task(world["journal"], world["task"], "dies", ttl=5,
                               now=then)
    with pytest.raises(RuntimeError):
        journal.run_step(world["journal"], world["task"], world["plan"].steps[5],
                         journal.Action(dies, rename.probe, rename.restore), claim,
                         now=then)
    result = decisions.unwind(world["journal"], world["task"], world["actions"],
                              who="sam")
    assert result == {"restore": [5, 4, 3, 2, 1], "compensation": [],
                      "left_as_found": [], "not_performed": [6]}
    assert drive.names(world["where"]["drive"]) == SCANS


def test_an_unwind_without_a_restore_is_refused_before_anything(world):
    run(world, should_stop=lambda: status(world).count("confirmed") >= 3)
    actions = {**world["actions"], "rename": journal.Action(
        world["actions"]["rename"].execute, world["actions"]["rename"].probe)}
    with pytest.raises(ValueError, match="rename"):
        decisions.unwind(world["journal"], world["task"], actions, who="sam")
    assert decisions.history(world["journal"], world["task"]) == []
    with pytest.raises(ValueError):
        decisions.unwind(world["journal"], world["task"], world["actions"], who=" ")


def test_unwind_never_overwrites_a_change_made_since(world):
    """The restore is a compare-and-set: a file someone renamed after our run
    is left as they named it, with a row that says so. A blind restore
    (no ``expect``) would put our before_state over their change."""
    run(world, should_stop=lambda: status(world).count("confirmed") >= 5)
    drive_path = world["where"]["drive"]
    drive.rename_to(drive_path, "f003", "kept-by-the-owner.pdf", requester="owner")
    result = decisions.unwind(world["journal"], world["task"], world["actions"],
                              who="sam")
    assert result == {"restore": [5, 4, 2, 1], "compensation": [],
                      "left_as_found": [3], "not_performed": []}
    assert drive.names(drive_path) == {**SCANS, "f003": "kept-by-the-owner.pdf"}
    [left] = [u for u in decisions.unwinds(world["journal"], world["task"])
              if u["step"] == 3]
    assert left["outcome"]["left_as_found"] == {"file_id": "f003",
                                                "name": "kept-by-the-owner.pdf"}
    again = decisions.unwind(world["journal"], world["task"], world["actions"],
                             who="sam")
    assert again == result  # recorded once: the second run reads the row
    assert drive.names(drive_path)["f003"] == "kept-by-the-owner.pdf"


def test_a_compare_and_set_rename_writes_nothing_on_a_mismatch(tmp_path):
    path = tmp_path / "drive.sqlite"
    drive.install(path, {"f001": "invoice-001.pdf"})
    with pytest.raises(drive.NameChanged) as changed:
        drive.rename_to(path, "f001", "scan-001.pdf", operation_key="undo-1",
                        expect="invoice-2026-001.pdf")
    assert (changed.value.expected, changed.value.found) == (
        "invoice-2026-001.pdf", "invoice-001.pdf")
    assert drive.snapshot(path)["rename_requests"] == []
    drive.rename_to(path, "f001", "scan-001.pdf", operation_key="undo-1",
                    expect="invoice-001.pdf")
    assert drive.names(path) == {"f001": "scan-001.pdf"}


@pytest.fixture
def guarded(tmp_path):
    """The restock world with both services guarded by a broker, and a
    credential issued to the journal worker's holder name."""
    plan = restock_plan()
    where = {**paths(str(tmp_path)), "broker": str(tmp_path / "broker.sqlite")}
    broker.install(where["broker"])
    task = build_world(str(tmp_path), plan, broker=where["broker"])
    token = broker.issue(where["broker"], HOLDER, "drive:rename mail:submit", 300)
    with opened(where["journal"]) as jc:
        yield {"journal": jc, "plan": plan, "task": task, "where": where,
               "dir": str(tmp_path), "token": token,
               "actions": restock_actions(where["drive"], where["mail"],
                                          credential=token)}


HOLDER = "journal-worker"  # the worker's --owner: the claim's and the credential's


def test_daylight_stays_stopped_and_its_command_resumes_exactly(tmp_path, guarded):
    world = guarded
    control.start_scheduler(world["journal"], "sam")
    run(world, should_stop=lambda: status(world).count("confirmed") >= 42)
    handover = tmp_path / "handover.md"
    command = resume_command(world["dir"], world["task"], who="dana",
                             broker_path=world["where"]["broker"])
    stop = {"broker": world["where"]["broker"], "holder": HOLDER}
    with pytest.raises(FileNotFoundError):  # refused before anything is written
        decisions.hand_to_daylight(
            world["journal"], world["task"], who="sam", reason="03:14",
            resume_command=command, path=str(tmp_path / "gone" / "handover.md"),
            **stop)
    assert not control.is_paused(world["journal"])
    assert decisions.history(world["journal"], world["task"]) == []
    assert broker.snapshot(world["where"]["broker"])["revocations"] == []
    shown = decisions.hand_to_daylight(
        world["journal"], world["task"], who="sam", reason="03:14, not urgent",
        resume_command=command, path=str(handover), **stop)
    assert control.is_paused(world["journal"])
    assert not control.scheduler_may_run(world["journal"])
    assert shown["in_doubt"] is None
    assert [e["step"] for e in shown["irreversible_done"]] == [42]
    assert shown["revoked"] == [world["token"]]
    [decided] = decisions.history(world["journal"], world["task"])
    assert decided["decision"] == "daylight"
    assert decided["detail"]["command"] == shlex.join(command)
    text = handover.read_text()
    assert shlex.join(command) in text and "step 42 (send_mail" in text
    assert f"Grant `{HOLDER}` again" in text
    with pytest.raises(FileExistsError):  # a hand-over is never overwritten
        decisions.hand_to_daylight(
            world["journal"], world["task"], who="sam", reason="again",
            resume_command=command, path=str(handover), **stop)
    assert len(decisions.history(world["journal"], world["task"])) == 1
    written = shlex.split(text.split("```")[1].strip())[1:]
    with Harness() as harness:
        # Overnight someone lifts the flag and starts the worker by hand with
        # the credential it had: the in-band stop is gone, the services refuse.
        control.set_paused(world["journal"], False)
        by_hand = harness.run([*WORKER, "--dir", world["dir"], "--task",
                               world["task"], "--credential", world["token"]])
        asks = harness.run(written)  # the hand-over's command, before a grant
    assert (by_hand.returncode, asks.returncode) == (3, 3), by_hand.stderr
    assert [r["reason"] for r in mail.snapshot(world["where"]["mail"])["refusals"]
            ] == [broker.REVOKED]
    assert len(mail.messages(world["where"]["mail"])) == 1  # nothing more left
    assert len(broker.snapshot(world["where"]["broker"])["credentials"]) == 1
    broker.grant(world["where"]["broker"], HOLDER, "dana")  # the morning's person
    with Harness() as harness:  # the day shift runs the command as written
        finished = harness.run(written)
    assert finished.returncode == 0, finished.stderr
    assert status(world).summary() == {"confirmed": 43, "in_doubt": 0,
                                       "not_started": 0}
    assert mail.duplicate_messages(world["where"]["mail"]) == 0
    assert len(mail.messages(world["where"]["mail"])) == 2


def test_a_stopped_holder_started_by_hand_gets_no_credential(guarded):
    """The worker path of ``issue``'s rule: a journal worker asking the broker
    for its credential (``--broker``) after its holder was revoked is refused
    before it writes anything; a person's grant lets the same command run."""
    world = guarded
    broker.revoke_holder(world["where"]["broker"], HOLDER, "sam")
    args = [*WORKER, "--dir", world["dir"], "--task", world["task"],
            "--broker", world["where"]["broker"]]
    with Harness() as harness:
        refused = harness.run(args)
    assert refused.returncode == 3 and "grant" in refused.stdout
    assert len(broker.snapshot(world["where"]["broker"])["credentials"]) == 1
    assert journal.entries(world["journal"], world["task"]) == []
    assert drive.snapshot(world["where"]["drive"])["rename_requests"] == []
    broker.grant(world["where"]["broker"], HOLDER, "sam")
    with Harness() as harness:
        done = harness.run(args)
    assert done.returncode == 0, done.stderr
    assert status(world).count("confirmed") == STEPS


# --- the switch, installed (was tests/test_guarantees_claims.py) -----------


def test_an_installed_switch_with_no_row_says_stopped(conn):
    """Bug: with no decision recorded, ``scheduler_may_run`` says run."""
    control.install(conn)
    assert control.scheduler_may_run(conn) is False
    assert control.start_run(conn, "s1") is None
    control.start_scheduler(conn, "sam")
    assert control.scheduler_may_run(conn) is True


# --- the switch's lock rules, made deterministic (issue 23: tests.lock_probe) --


def switch_probe(store_at, monkeypatch, target, name, call):
    """``lock_probe.second_writer_got_in`` on a runtime whose scheduler a
    person started; whether the second writer got in, and the address."""
    address = store_at("runtime")
    with opened(address) as setup:
        control.install(setup)
        control.start_scheduler(setup, "sam", now=1000.0)
    return second_writer_got_in(address, monkeypatch, target, name, call), address


def test_a_stop_is_stamped_under_the_lock_not_before_it(store_at, monkeypatch):
    """Bug: ``_switch`` out of its ``immediate`` block: the stop's instant is
    read before the lock, so a run started meanwhile is stamped later than a
    stop that rules it out."""
    got_in, _ = switch_probe(
        store_at, monkeypatch, store, "now",
        lambda conn: control.stop_scheduler(conn, "sam", "halt"))
    assert not got_in, "another writer committed while the stop read its instant"


def test_the_pause_flag_is_stamped_under_the_lock_not_before_it(store_at,
                                                                 monkeypatch):
    """Bug: ``set_paused`` out of its ``immediate`` block."""
    got_in, address = switch_probe(
        store_at, monkeypatch, store, "now",
        lambda conn: control.set_paused(conn, True))
    assert not got_in, "another writer committed while changed_at was read"
    with opened(address) as conn:
        assert control.is_paused(conn) is True


def test_a_run_reads_the_switch_under_the_lock_of_its_insert(store_at,
                                                              monkeypatch):
    """Bug: ``start_run`` reads the switch outside its write transaction: a
    stop that commits between that read and the insert starts a run anyway."""
    got_in, address = switch_probe(
        store_at, monkeypatch, control, "_latest_switch",
        lambda conn: control.start_run(conn, "s1"))
    assert not got_in, "another writer committed between the read and the insert"
    with opened(address) as conn:
        assert len(control.snapshot(conn)["runs"]) == 1


@pytest.mark.parametrize("now", [float("nan"), float("inf"), "soon", True])
def test_a_bad_instant_for_the_switch_is_refused_before_anything(conn, now):
    """Bug: ``_switch`` without its up-front ``clock(now)``: the tables are
    made before the instant is refused."""
    with pytest.raises((TypeError, ValueError)):
        control.stop_scheduler(conn, "sam", "why", now=now)
    assert objects(conn) == 0


@pytest.mark.parametrize("scheduler", ["", "   ", None, 7])
def test_a_run_without_a_scheduler_name_is_refused_and_nothing_written(
        conn, scheduler):
    """Bug: ``start_run`` without its ``check_text("scheduler", ...)``."""
    control.start_scheduler(conn, "sam")
    with pytest.raises((TypeError, ValueError)):
        control.start_run(conn, scheduler)
    assert control.snapshot(conn)["runs"] == []


@pytest.mark.parametrize("command", [[], ["python", ""], ["python", 5], [""],
                                     [None]])
def test_a_hand_over_with_a_bad_resume_command_is_refused_before_anything(
        tmp_path, guarded, command):
    """Bug: ``hand_to_daylight``'s check of ``resume_command`` with its
    ``and``/``or`` swapped: an empty command, or one with a blank or a
    non-text word, would be written into the hand-over as the way back."""
    world = guarded
    with pytest.raises(ValueError, match="resume_command"):
        decisions.hand_to_daylight(
            world["journal"], world["task"], who="sam", reason="03:14",
            resume_command=command, path=str(tmp_path / "handover.md"),
            broker=world["where"]["broker"], holder=HOLDER)
    assert not (tmp_path / "handover.md").exists()
    assert not control.is_paused(world["journal"])
    assert decisions.history(world["journal"], world["task"]) == []
    assert broker.snapshot(world["where"]["broker"])["revocations"] == []


@pytest.mark.parametrize("blank", ["who", "reason", "holder"])
def test_a_hand_over_by_nobody_or_for_no_reason_is_refused_before_anything(
        tmp_path, guarded, blank):
    """Bug: ``hand_to_daylight`` without one of its ``check_text`` calls: the
    holder is revoked and the run stopped by nobody, or for no reason."""
    world = guarded
    names = {"who": "sam", "reason": "03:14", "holder": HOLDER, blank: " "}
    command = resume_command(world["dir"], world["task"], who="dana",
                             broker_path=world["where"]["broker"])
    with pytest.raises(ValueError):
        decisions.hand_to_daylight(
            world["journal"], world["task"], resume_command=command,
            path=str(tmp_path / "handover.md"), broker=world["where"]["broker"],
            **names)
    assert not (tmp_path / "handover.md").exists()
    assert not control.is_paused(world["journal"])
    assert decisions.history(world["journal"], world["task"]) == []
    assert broker.snapshot(world["where"]["broker"])["revocations"] == []


def test_a_changed_target_says_what_changed():
    """Bug: ``ChangedSince`` without its message: the refusal reads blank."""
    changed = decisions.ChangedSince("f003 is now kept.pdf", found={"name": "x"})
    assert (str(changed), changed.found) == ("f003 is now kept.pdf", {"name": "x"})
