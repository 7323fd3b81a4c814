"""The chapter 08 worker as real processes: SIGKILL at every boundary, two
recovery workers released together, the drafts, cancellation, a holder that
is paused (held or SIGSTOPped), not dead, and a recovery killed at random.

Every count comes from the services' rows: the supplier's ``requests`` (each
POST it decided), the payment service's ``payments``, the mail provider's
``messages``; who won comes from the worker's history rows."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter

import pytest

from crashcourse import workflow
from crashcourse.lab.example import FLOUR, NoNewReasoning, ScriptedModel
from crashcourse.lab.harness import Harness
from crashcourse.services import mail, payments
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import immediate, opened, table_rows
from crashcourse.workers import workflow_worker
from crashcourse.workers.workflow_worker import BOUNDARIES, EXIT
from crashcourse.workflow import steps as workflow_steps

RACERS = ("recovery-a", "recovery-b")
# Every worker's attempts are held this long: more than a call's declared wait
# (``CALL_WAIT_S``), so a call can be admitted, and short enough that a
# recovery waiting for a dead holder's lease keeps the tests quick.
LEASE = str(workflow_worker.CALL_WAIT_S + 2)


class World:
    def __init__(self, harness, directory, approved=True):
        self.harness, self.directory = harness, str(directory)
        built = workflow_worker.build_world(self.directory, approved=approved)
        self.id, self.paths = built["workflow_id"], built["paths"]
        self.choices = built["choices"]
        self.url = start_supplier(harness, self.paths["supplier"]).url

    def args(self, who, mode="versioned", *more):
        return ["-m", "crashcourse.workers.workflow_worker", "--dir",
                self.directory, "--workflow", self.id, "--who", who,
                "--url", self.url, "--mode", mode, "--lease", LEASE, *more]

    def held(self, who, at, mode="versioned"):
        worker = self.harness.start(self.args(who, mode), stop_at=at)
        worker.wait_for_boundary()
        return worker

    def race(self, mode="versioned", between=None):
        racers = [self.held(who, "after_read", mode) for who in RACERS]
        if between:
            between()
        for racer in racers:  # both leave the starting line together
            racer.release()
        return {who: racer.finish() for who, racer in zip(RACERS, racers,
                                                            strict=True)}

    def ops(self) -> Counter:
        with opened(self.paths["supplier"]) as conn:
            ops = Counter(r["operation_key"] for r in table_rows(conn, "requests")
                          if r["method"] == "POST")
        ops.update(p["key"] for p in payments.snapshot(self.paths["payments"])
                   ["payments"])
        ops.update(m["operation_key"] for m in mail.messages(self.paths["mail"]))
        return ops

    def keys(self) -> dict:
        return {s["step"]: s["operation_key"] for s in self.read()["choices"]}

    def read(self) -> dict:
        with opened(self.paths["workflow"]) as conn:
            return workflow.read(conn, self.id)

    def history(self) -> list:
        with opened(self.paths["workflow"]) as conn:
            return workflow.history(conn, self.id)

    def report(self) -> dict:
        with opened(self.paths["workflow"]) as conn:
            return workflow_steps.final_report(conn, self.id)

    def cancel(self) -> int:
        with opened(self.paths["workflow"]) as conn:
            seen = workflow.read(conn, self.id)["version"]
            return workflow.cancel(conn, self.id, expected_version=seen,
                                   who="person")

    def compensate(self) -> dict:
        remotes = workflow_worker.restock_remotes(self.paths, self.url)
        with opened(self.paths["workflow"]) as conn:
            return workflow_steps.compensate(conn, self.id, remotes, who="person")


@pytest.fixture
def world(tmp_path):
    with Harness() as harness:
        yield World(harness, tmp_path)


def writers_after(world, version) -> Counter:
    return Counter(h["who"] for h in world.history() if h["version"] > version)


def last_json(finished) -> dict:
    return json.loads(finished.stdout.strip().splitlines()[-1])


def test_one_run_applies_and_every_service_records_each_key_once(world):
    done = world.harness.run(world.args("worker-1"))
    assert done.returncode == 0, done.stderr
    assert world.read()["state"] == workflow.APPLIED
    assert world.ops() == Counter(set(world.keys().values()))
    assert last_json(done)["transitions"] == 8  # start, 3 x (attempt, outcome), end


@pytest.mark.parametrize("boundary", BOUNDARIES[1:])
def test_a_kill_at_every_boundary_then_two_recovery_workers(world, boundary):
    killed = world.held("worker-1", boundary).kill()
    assert killed.returncode == -9
    after = world.read()["version"]
    finished = world.race()
    writers = writers_after(world, after)
    [winner] = writers  # exactly one recovery worker made any transition
    [loser] = set(RACERS) - {winner}
    assert finished[winner].returncode == 0
    assert finished[loser].returncode == EXIT["refused"]
    assert last_json(finished[loser])["refused"] == workflow.STALE_VERSION
    assert "Traceback" not in finished[loser].stderr
    assert world.read()["state"] == workflow.APPLIED
    assert world.ops() == Counter(set(world.keys().values()))  # each once
    # a call that may have happened is asked about, never made blindly again:
    # the payment service would hide a second call (a replay adds no row)
    with opened(world.paths["workflow"]) as conn:
        step = workflow_steps.step_of(conn, world.id, boundary.split(":")[1])
    assert ("probed" in step["outcome"]) == boundary.startswith("after_remote")


def test_a_step_in_doubt_at_the_supplier_is_looked_up_before_any_post(world):
    world.held("worker-1", "before_remote:reserve").kill()
    world.race()
    with opened(world.paths["supplier"]) as conn:
        methods = [r["method"] for r in table_rows(conn, "requests")]
    # the winner asked first; the loser's lookup may come before or after
    assert methods[0] == "GET" and methods.count("POST") == 1


def test_the_naive_draft_sends_the_confirmation_twice(world):
    world.held("worker-1", "before_remote:mail", mode="unversioned").kill()
    after = world.read()["version"]
    finished = world.race(mode="unversioned")
    assert [f.returncode for f in finished.values()] == [0, 0]
    mails = Counter(m["operation_key"] for m in mail.messages(world.paths["mail"]))
    assert mails[world.keys()["mail"]] == 2  # one remote call made twice
    assert set(writers_after(world, after)) == set(RACERS)  # both "won"


def test_waiting_for_approval_then_a_person_approves_and_one_worker_resumes(
        tmp_path):
    with Harness() as harness:
        world = World(harness, tmp_path, approved=False)
        first = harness.run(world.args("worker-1"))
        assert (first.returncode, last_json(first)["state"]) == (0, workflow.WAITING)
        assert world.ops() == Counter([world.keys()["reserve"]])  # not charged
        payments.approve(world.paths["payments"], **world.choices["charge"])
        after = world.read()["version"]
        finished = world.race()
        assert len(writers_after(world, after)) == 1
        assert sorted(f.returncode for f in finished.values()) == [0, EXIT["refused"]]
        assert world.read()["state"] == workflow.APPLIED
        assert world.ops() == Counter(set(world.keys().values()))


def test_a_cancel_between_the_mail_and_its_outcome_explains_the_sent_mail(world):
    held = world.held("worker-1", "after_remote:mail")
    world.cancel()
    held.release()
    refused = held.finish()
    assert refused.returncode == EXIT["refused"]
    assert last_json(refused)["refused"] == workflow.STALE_VERSION
    report = world.compensate()
    assert report["state"] == workflow.CANCELLED
    assert report["completed"] == ["reserve", "charge", "mail"]
    assert (report["undone"], report["needs_person"], report["cannot_undo"]) == (
        ["reserve"], ["charge"], ["mail"])
    actions = {c["step"]: c["action"] for c in report["compensations"]}
    assert actions == {"reserve": "released", "charge": "refund_owed",
                       "mail": "cannot_unsend"}
    release_key = report["compensations"][0]["compensation_key"]
    assert release_key not in world.keys().values()  # its own key
    with opened(world.paths["supplier"]) as conn:
        [release] = table_rows(conn, "releases")
    assert (release["operation_key"], release["order_key"]) == (
        release_key, world.keys()["reserve"])
    before = world.ops()
    assert world.compensate() == report  # settled once: nothing new
    assert world.ops() == before
    assert all(n == 1 for n in before.values())


def test_a_cancel_while_both_workers_hold_the_pending_workflow(world):
    finished = world.race(between=world.cancel)
    assert [f.returncode for f in finished.values()] == [EXIT["refused"]] * 2
    assert world.compensate()["compensations"] == []
    assert world.ops() == Counter()
    assert [h["who"] for h in world.history()] == ["planner", "person"]


def test_a_cancelled_workflow_is_left_alone_by_a_later_worker(world):
    world.cancel()
    done = world.harness.run(world.args("late"))
    assert (done.returncode, last_json(done)["state"]) == (0, workflow.CANCELLED)
    assert [h["who"] for h in world.history()] == ["planner", "person"]


def test_recovery_never_asks_the_model(tmp_path):
    """In-process: the first run asks the scripted model once; a recovery
    with a model that fails when asked finishes from the records."""
    with Harness() as harness:
        where = workflow_worker.paths(str(tmp_path))
        for service in (payments, mail):
            service.install(where[service.__name__.rsplit(".", 1)[1]])
        supplier = start_supplier(harness, where["supplier"])
        remotes = workflow_worker.restock_remotes(where, supplier.url)
        model = ScriptedModel(FLOUR)
        with opened(where["workflow"]) as conn:
            workflow_steps.install(conn)
            first = workflow_worker.run(conn, "wf-9", remotes, who="a", model=model)
            assert first["state"] == workflow.WAITING  # nobody approved yet
            charge = workflow.read(conn, "wf-9")["choices"][1]["args"]
            payments.approve(where["payments"], **charge)
            again = workflow_worker.run(conn, "wf-9", remotes, who="b",
                                        model=NoNewReasoning())
        assert (model.calls, again["state"]) == (1, workflow.APPLIED)


@pytest.mark.parametrize("argv", [
    [], ["--dir"], ["--dir", "D", "--workflow", "W", "--who", "w"],
    ["--dir", "D", "--workflow", "W", "--who", "w", "--url", "U", "--mode", "fast"],
    ["--dir", "D", "--workflow", "W", "--who", " ", "--url", "U"],
])
def test_usage_errors_exit_2(tmp_path, argv):
    argv = [a.replace("D", str(tmp_path)) for a in argv]
    done = subprocess.run([sys.executable, "-m", "crashcourse.workers.workflow_worker",
                           *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT["usage"] and "Traceback" not in done.stderr


def test_an_unknown_workflow_or_folder_exits_2_and_writes_nothing(world, tmp_path):
    with opened(world.paths["workflow"]) as conn:
        before = workflow_steps.snapshot(conn)
    for folder, workflow_id in ((world.directory, "nope"),
                                (str(tmp_path / "empty"), world.id)):
        done = world.harness.run(["-m", "crashcourse.workers.workflow_worker",
                                  "--dir", folder, "--workflow", workflow_id,
                                  "--who", "w", "--url", world.url])
        assert done.returncode == EXIT["usage"] and "Traceback" not in done.stderr
    with opened(world.paths["workflow"]) as conn:
        assert workflow_steps.snapshot(conn) == before
    assert not (tmp_path / "empty").exists()


def test_the_worker_starts_light():
    code = ("import sys, crashcourse.workers.workflow_worker;"
            "print(sorted(m for m in ('crashcourse.lab.example', 'argparse',"
            " 'crashcourse.lab.harness', 'matplotlib') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def supplier_posts(world) -> list[tuple]:
    """Every POST the supplier decided: (generation, answer), in order."""
    with opened(world.paths["supplier"]) as conn:
        return [(r["generation"], r["answer"]) for r in table_rows(conn, "requests")
                if r["method"] == "POST"]


def attempt_of(world, who, step) -> int:
    """The version of ``who``'s attempt at ``step``, from the history rows."""
    return next(h["version"] for h in world.history()
                if h["who"] == who and h["note"] == f"attempt {step}")


def paused_then_replaced(world, at, freeze):
    """worker-1 paused at boundary ``at`` (held there, or SIGSTOPped just
    after it), a recovery runs to the end meanwhile, then worker-1 goes on.
    (recovery's exit, worker-1's exit)."""
    first = world.held("worker-1", at)
    if freeze:
        first.freeze()  # stopped by the kernel: the release waits in its pipe
        first.release()
    recovery = world.harness.run(world.args("recovery"))
    first.thaw() if freeze else first.release()
    return recovery, first.finish()


@pytest.mark.parametrize("step", ["reserve", "charge", "mail"])
def test_a_holder_paused_before_its_admission_calls_nothing(world, step):
    """Held or frozen between its attempt and its call, worker-1 is refused
    at the admission: each effect once, and the recovery said it waited."""
    recovery, first = paused_then_replaced(world, f"before_remote:{step}",
                                           freeze=step != "charge")
    assert recovery.returncode == 0, recovery.stderr
    assert last_json(recovery)["waited_for"] == [
        {"step": step, "version": attempt_of(world, "worker-1", step),
         "who": "worker-1"}]
    assert first.returncode == EXIT["refused"] and "Traceback" not in first.stderr
    assert world.ops() == Counter(set(world.keys().values()))  # each once
    assert world.read()["state"] == workflow.APPLIED
    with opened(world.paths["workflow"]) as conn:
        held = {r["version"]: r for r in table_rows(conn, "workflow_steps")}
    assert held[attempt_of(world, "worker-1", step)]["admitted_at"] is None


@pytest.mark.parametrize("step", ["reserve", "charge", "mail"])
def test_a_holder_paused_in_the_residual_window_is_refused_only_where_the_service_can(
        world, step):
    """Frozen after its admission, worker-1 sends after the recovery did:
    the supplier refuses its token (412), the payment service replays its
    key, and the mail provider, which takes neither, accepts a second message,
    which the probe then sees by the key header. What no agent-side check
    can prevent, measured: it is not a guarantee, it is its limit."""
    recovery, first = paused_then_replaced(world, f"admitted:{step}", freeze=True)
    assert recovery.returncode == 0 and first.returncode == EXIT["refused"]
    ops, keys = world.ops(), world.keys()  # records per key, each service's
    mine = attempt_of(world, "worker-1", step)
    late = [answer for generation, answer in supplier_posts(world)
            if generation == mine]
    assert late == ([412] if step == "reserve" else [])  # refused by the fence
    made = {"reserve": sum(answer == 201 for _, answer in supplier_posts(world)),
            "charge": ops[keys["charge"]], "mail": ops[keys["mail"]]}
    assert made == {"reserve": 1, "charge": 1, "mail": 2 if step == "mail" else 1}
    remotes = workflow_worker.restock_remotes(world.paths, world.url)
    with opened(world.paths["workflow"]) as conn:
        mail_step = workflow_steps.step_of(conn, world.id, "mail")
    found, seen = remotes["mail"].probe(mail_step["args"], keys["mail"])
    assert found and seen["copies"] == made["mail"]  # the header shows it


def test_the_version_only_draft_lets_a_paused_holder_mail_twice(world):
    """The negative control of the admission: ``--mode unleased`` (versions,
    no lease, no admission) probes at once and lets the held call out."""
    first = world.held("worker-1", "before_remote:mail", mode="unleased")
    recovery = world.harness.run(world.args("recovery", "unleased"))
    first.release()
    assert (recovery.returncode, first.finish().returncode) == (0, EXIT["refused"])
    mails = Counter(m["operation_key"] for m in mail.messages(world.paths["mail"]))
    assert mails[world.keys()["mail"]] == 2
    assert world.report()["in_doubt"] == []  # and the report cannot see it


def test_a_recovery_that_cannot_wait_long_enough_exits_held_and_asks_nobody(world):
    world.held("worker-1", "before_remote:reserve").kill()
    before = supplier_posts(world), world.history()
    impatient = world.harness.run(world.args("recovery", "versioned",
                                             "--patience", "0.5"))
    assert impatient.returncode == EXIT["held"]
    assert last_json(impatient)["held"] == {
        "step": "reserve", "version": attempt_of(world, "worker-1", "reserve"),
        "who": "worker-1"}
    with opened(world.paths["supplier"]) as conn:
        assert table_rows(conn, "requests") == []  # no lookup, no POST
    assert (supplier_posts(world), world.history()) == before


def lease_ends(world) -> float:
    """The end of the last live lease on a step in doubt (the store's clock)."""
    with opened(world.paths["workflow"]) as conn:
        held = [workflow_steps.holder(s["attempts"])["expires"]
                for s in workflow_steps.progress(conn, world.id)
                if s["status"] == workflow_steps.IN_DOUBT]
    return max([time.time(), *held])


def test_recovery_killed_at_random_instants_ends_with_each_effect_once(world):
    """Crash during recovery: worker-1 dies in the residual window of the
    charge; a recovery dies between the mail's call and its outcome; two
    more are SIGKILLed at random instants of their runs (waiting out a lease,
    probing, calling); a last one runs to the end. Dead workers send nothing
    late, and every step in doubt is asked about before it is called again."""
    rng = random.Random(8)
    world.held("worker-1", "admitted:charge").kill()
    world.held("recovery-0", "after_remote:mail").kill()
    for number in (1, 2):
        recovery = world.harness.start(world.args(f"recovery-{number}"))
        # a random instant near the end of the lease it waits for (read from
        # the store's rows; a SQLite file's clock is this host's): its work
        # after the lease takes tens of milliseconds, the wait seconds. The
        # instant is the trial's input, not a wait for an event: every
        # assertion below holds whatever it is, a kill before the lease's end
        # or after the recovery finished included (issue 36, judged).
        time.sleep(max(0.0, lease_ends(world) + rng.uniform(-0.25, 0.1)
                       - time.time()))
        recovery.kill(expect_sigkill=False)  # it may have finished first
    last = world.harness.run(world.args("recovery-last"))
    assert last.returncode == 0, last.stderr
    assert world.read()["state"] == workflow.APPLIED
    assert world.ops() == Counter(set(world.keys().values()))  # each once


def test_a_replacement_beside_a_holder_frozen_holding_the_lock_says_held(world):
    """Issue 35: worker-1 frozen (SIGSTOP) inside its first transition's
    write transaction (``moving:running``, the workflow's write lock taken)
    made a replacement wait out the busy timeout and exit 74, "the machine
    refused: database is locked". It is not the machine: another holder has
    the workflow, so it is the documented "held" (4), one JSON line, nothing
    written. Thawed, worker-1 commits its move and runs: each effect once."""
    first = world.held("worker-1", "moving:running")
    first.freeze()  # inside the transaction, holding the write lock
    first.release()  # read once it runs again
    before = world.history(), world.ops()
    replacement = world.harness.run(world.args("recovery"))
    after = world.history(), world.ops()
    first.thaw()
    ended = first.finish()
    assert replacement.returncode == EXIT["held"], replacement.stderr
    assert replacement.stderr == ""  # no traceback, no "the machine refused"
    assert "write lock" in last_json(replacement)["held"]
    assert after == before  # the replacement wrote nothing, called nothing
    assert ended.returncode == 0, ended.stderr
    assert {h["who"] for h in world.history()} == {"planner", "worker-1"}
    assert world.ops() == Counter(set(world.keys().values()))  # each once
    assert world.read()["state"] == workflow.APPLIED


def test_a_recovery_beside_a_holder_frozen_inside_the_mail_transaction(world):
    """Issue 35: worker-1 frozen inside the mail provider's own transaction
    (``mail:submit:admitted``, its message not committed) keeps the
    provider's lock. The recovery, once worker-1's lease is over, probes
    (nothing), is admitted and waits the call's declared wait for the lock:
    it exited 74 ("the machine refused: database is locked"). The provider
    decided nothing: the documented 5, one line, the step in doubt. Thawed,
    worker-1's message commits (its residual window) and its outcome is
    refused; a third worker probes, finds it, and sends none."""
    first = world.held("worker-1", f"{mail.SUBMIT}:admitted")
    first.freeze()  # inside the provider's transaction, holding its lock
    first.release()
    recovery = world.harness.run(world.args("recovery"))
    unsent = world.ops()[world.keys()["mail"]]
    first.thaw()
    ended = first.finish()
    third = world.harness.run(world.args("third"))
    assert recovery.returncode == EXIT["unreachable"], recovery.stderr
    assert "Traceback" not in recovery.stderr
    assert "mail provider" in last_json(recovery)["unreachable"]
    assert unsent == 0  # the recovery's wait sent nothing
    assert ended.returncode == EXIT["refused"], ended.stderr
    assert third.returncode == 0, third.stderr
    assert world.ops() == Counter(set(world.keys().values()))  # each once
    assert world.read()["state"] == workflow.APPLIED


def test_a_charge_beside_a_writer_holding_the_payment_service_exits_unreachable(
        world):
    """Issue 35: the payment service's lock kept past the call's declared
    wait raised ``PaymentServiceBusy``, a RuntimeError: a traceback. Nothing
    was charged: the documented 5, one line, the charge in doubt."""
    with opened(world.paths["payments"]) as holder, immediate(holder):
        busy = world.harness.run(world.args("worker-1"))
    assert busy.returncode == EXIT["unreachable"], busy.stderr
    assert "Traceback" not in busy.stderr
    assert "busy" in last_json(busy)["unreachable"]
    assert world.ops()[world.keys()["charge"]] == 0
    assert world.report()["in_doubt"] == ["charge"]
