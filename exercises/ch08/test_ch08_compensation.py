"""Grades exercise 08.3 (compensation.py) on real cancelled workflows.

Each world has its own real supplier process and real workers, stopped or
SIGKILLed where the case says; the script plays the person who cancels. The
plan is then compared with what the runtime's own ``compensate`` writes and
with the supplier's releases, all read from rows."""

import pytest

from crashcourse import workflow
from crashcourse.effects import FencingToken
from crashcourse.lab.harness import Harness
from crashcourse.services import supplier as supplier_client
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import opened, table_rows
from crashcourse.workers.workflow_worker import build_world, restock_remotes
from crashcourse.workflow import steps as workflow_steps

WAIT_S = 60  # bounded waits: a worker that overruns is killed and the test fails
RELEASED, OWED, SENT = (("released", "undone"), ("refund_owed", "needs_person"),
                        ("cannot_unsend", "cannot_undo"))
NONE, WAIT = ("none", "nothing_to_undo"), ("wait", "in_doubt")
LONG_LEASE = "600"  # the held and killed callers' lease outlasts every test
# case -> what each step needs: (action, status)
CASES = {
    "cancel:pending": {"reserve": NONE, "charge": NONE, "mail": NONE},
    "killed:before_remote:reserve": {"reserve": NONE, "charge": NONE,
                                     "mail": NONE},
    # fenced before the probe: "no such order" is final, lease or no lease
    "killed:admitted:reserve": {"reserve": NONE, "charge": NONE, "mail": NONE},
    "cancel:after_remote:reserve": {"reserve": RELEASED, "charge": NONE,
                                    "mail": NONE},
    "cancel:waiting_for_approval": {"reserve": RELEASED, "charge": NONE,
                                    "mail": NONE},
    "held:admitted:mail": {"reserve": RELEASED, "charge": OWED, "mail": WAIT},
    "cancel:after_remote:mail": {"reserve": RELEASED, "charge": OWED, "mail": SENT},
}
WORLD = "the grader's world, not your answer: "  # a set-up assert's message
COMPARED = ("step", "operation_key", "action", "status", "compensation_key")


class World:
    """One cancelled restock workflow, its files and its supplier process."""

    def __init__(self, harness: Harness, directory, case: str):
        self.harness, self.directory = harness, str(directory)
        built = build_world(self.directory,
                            approved=case != "cancel:waiting_for_approval")
        self.id, self.paths = built["workflow_id"], built["paths"]
        self.url = start_supplier(harness, self.paths["supplier"]).url
        if case.startswith("cancel:after_remote"):  # held between call and outcome
            held = self.worker(case.split(":", 1)[1])
            self.cancel()
            held.release()
            code = held.finish(WAIT_S).returncode
            assert code == 3, (  # its outcome is refused
                f"{WORLD}the worker held at {case} was to have its outcome refused"
                f" after the cancel (exit 3), and exited {code}")
        elif case.startswith("held:"):  # held after its admission, and still held
            self.held = self.worker(case.split(":", 1)[1])
            self.cancel()
        elif case.startswith("killed:"):
            code = self.worker(case.split(":", 1)[1]).kill().returncode
            assert code == -9, (
                f"{WORLD}the worker was to be SIGKILLed at {case}, and exited {code}")
            self.cancel()
        else:
            if case == "cancel:waiting_for_approval":
                ran = harness.run(self.args(), WAIT_S)
                state = self.read()["state"]
                assert ran.returncode == 0 and state == workflow.WAITING, (
                    f"{WORLD}the unapproved worker was to stop waiting for its"
                    f" approval, exit 0; it exited {ran.returncode}, state {state!r}")
            self.cancel()

    def args(self) -> list[str]:
        return ["-m", "crashcourse.workers.workflow_worker", "--dir",
                self.directory, "--workflow", self.id, "--who", "worker-1",
                "--url", self.url, "--lease", LONG_LEASE]

    def worker(self, stop_at: str):
        started = self.harness.start(self.args(), stop_at=stop_at)
        started.wait_for_boundary(WAIT_S)
        return started

    def read(self) -> dict:
        with opened(self.paths["workflow"]) as conn:
            return workflow.read(conn, self.id)

    def cancel(self) -> int:
        with opened(self.paths["workflow"]) as conn:
            seen = workflow.read(conn, self.id)["version"]
            return workflow.cancel(conn, self.id, expected_version=seen,
                                   who="person")

    def probed(self) -> dict:
        """Each step in doubt, asked about at its service by operation key;
        at a service that takes the token, after the cancel's fence, as
        ``compensate`` asks (issue 29)."""
        remotes = restock_remotes(self.paths, self.url)
        token = (self.id, self.read()["version"])
        with opened(self.paths["workflow"]) as conn:
            doubt = [s for s in workflow_steps.progress(conn, self.id)
                     if s["status"] == workflow_steps.IN_DOUBT]
        answers = {}
        for s in doubt:
            remote = remotes[s["step"]]
            if remote.fence is not None:
                remote.fence(token)
            answers[s["step"]] = remote.probe(s["args"], s["operation_key"])[0]
        return answers

    def plan(self, mod, probed, now=None) -> list[dict]:
        with opened(self.paths["workflow"]) as conn:
            return mod.compensation_plan(conn, self.id, probed, now)

    def rows(self) -> dict:
        with opened(self.paths["workflow"]) as conn:
            worker = workflow_steps.snapshot(conn)
        with opened(self.paths["supplier"]) as conn:
            supplier = {t: table_rows(conn, t) for t in ("requests", "releases")}
        return {"worker": worker, "supplier": supplier}

    def compensate(self, now=None) -> dict:
        """The runtime's own compensation, as the person runs it."""
        remotes = restock_remotes(self.paths, self.url)
        with opened(self.paths["workflow"]) as conn:
            return workflow_steps.compensate(conn, self.id, remotes, who="person",
                                             now=now)

    def lease_end(self, step) -> float:
        """When the lease of ``step``'s last attempt ends (the store's clock)."""
        with opened(self.paths["workflow"]) as conn:
            return workflow_steps.step_of(conn, self.id, step)["attempts"][-1][
                "expires"]


def agrees(plan: list[dict], report: dict) -> None:
    """The plan says what the runtime's compensation wrote, step by step."""
    rows = {row["step"]: row for row in report["compensations"]}
    for entry in plan:
        said = {k: entry[k] for k in COMPARED}
        if entry["step"] in rows:
            wrote = {k: rows[entry["step"]][k] for k in COMPARED}
            assert said == wrote, (
                f"the plan for {entry['step']} is not what the runtime's"
                " compensation then wrote (a release needs its own key, a step"
                f" the probe did not find has nothing to undo); planned {said},"
                f" the runtime wrote {wrote}")
        elif entry["step"] in report["in_doubt"]:  # no row yet: may be in flight
            assert (entry["action"], entry["status"], entry["compensation_key"]) == (
                *WAIT, None), (
                f"{entry['step']} is left in doubt by the runtime (its call may"
                " still be in flight), and the plan settled it instead of"
                f" waiting: planned {said}")
        else:  # the runtime writes no row for a step never attempted or refused
            assert (entry["action"], entry["status"], entry["compensation_key"]) == (
                *NONE, None), (
                f"{entry['step']} was never done (the runtime writes no row for"
                f" it), and the plan undoes it anyway: planned {said}")


@pytest.fixture
def mod(answer):
    return answer("ch08", "compensation")


@pytest.fixture
def harness():
    with Harness() as owned:
        yield owned


@pytest.fixture(scope="module")
def mail_in_doubt(tmp_path_factory):
    """Cancelled between the mail's call and its outcome; read, never changed."""
    with Harness() as owned:
        yield World(owned, tmp_path_factory.mktemp("doubt"),
                    "cancel:after_remote:mail")


@pytest.mark.parametrize("case", CASES)
def test_the_plan_is_what_the_runtime_then_does(mod, harness, tmp_path, case):
    world = World(harness, tmp_path, case)
    probed = world.probed()
    before = world.rows()
    plan = world.plan(mod, probed)
    assert world.rows() == before, (  # the plan writes nothing and calls nobody
        f"making the plan ({case}) changed rows of the worker or the supplier:"
        " a plan only reads, it writes nothing and calls nobody")
    again = world.plan(mod, probed)
    assert again == plan, (  # and says the same thing twice
        f"asked twice on the same rows ({case}) the plan said two things:"
        f" {plan}, then {again}")
    fates = {e["step"]: (e["action"], e["status"]) for e in plan}
    assert fates == CASES[case], (
        f"after {case} the plan decided the steps wrong: a step in doubt with"
        " no admission has nothing to undo, an admitted call waits for its"
        " lease, only what the probe finds is undone; planned"
        f" {fates}, expected {CASES[case]}")
    listed = [e["step"] for e in plan]
    assert listed == ["reserve", "charge", "mail"], (
        f"the plan ({case}) does not list every step in order, so a step"
        f" missing reads as forgotten: it lists {listed}")
    assert all(isinstance(e["note"], str) and e["note"].strip() for e in plan), (
        f"an entry of the plan ({case}) has no note for the person who reads"
        f" it: {[e['note'] for e in plan]}")
    report = world.compensate()
    agrees(plan, report)
    released = [r["operation_key"] for r in world.rows()["supplier"]["releases"]]
    planned = [e["compensation_key"] for e in plan if e["action"] == "released"]
    assert released == planned, (
        f"the supplier's releases after {case} are not the ones the plan names:"
        f" released under {released}, planned {planned}")


def test_the_release_has_its_own_key_so_carrying_it_out_twice_releases_once(
        mod, harness, tmp_path):
    """The person follows the plan by hand, then the runtime compensates too:
    both ask the supplier for the release under the plan's key."""
    world = World(harness, tmp_path, "cancel:after_remote:mail")
    [release] = [e for e in world.plan(mod, world.probed())
                 if e["action"] == "released"]
    assert release["compensation_key"] != release["operation_key"], (
        "the release was planned under the reservation's own key: it is a"
        " second effect and needs its own key;"
        f" both are {release['operation_key']!r}")
    status, _ = supplier_client.release_order(
        world.url, release["operation_key"], release["compensation_key"],
        token=FencingToken(world.id, world.read()["version"]))
    assert status == 201, (
        "the supplier refused the release the plan names (the person's, by"
        f" hand): status {status}, key {release['compensation_key']!r}")
    report = world.compensate()
    assert report["undone"] == ["reserve"], (
        "the runtime's compensation after the person's release did not undo"
        f" the reservation (alone): undone {report['undone']}")
    releases = world.rows()["supplier"]["releases"]
    keys = [r["operation_key"] for r in releases]
    assert keys == [release["compensation_key"]], (
        "the person's release and the runtime's were not one release: the"
        " plan's key is not the one the runtime uses, so the supplier kept"
        f" two; releases under {keys}, planned {release['compensation_key']!r}")


def test_a_workflow_that_was_not_cancelled_has_no_plan(mod, harness, tmp_path):
    built = build_world(str(tmp_path))  # pending: nothing to compensate yet
    with opened(built["paths"]["workflow"]) as conn:
        before = workflow_steps.snapshot(conn)
        with pytest.raises(ValueError):
            said = mod.compensation_plan(conn, built["workflow_id"])
            pytest.fail("a workflow that was not cancelled (pending) was given"
                        f" a plan instead of a ValueError: {said}")
        with pytest.raises(KeyError):
            said = mod.compensation_plan(conn, "restock-404")
            pytest.fail("a workflow that does not exist (restock-404) was given"
                        f" a plan instead of a KeyError: {said}")
        assert workflow_steps.snapshot(conn) == before, (
            "asking for a plan of a workflow not cancelled changed its rows:"
            " a plan only reads")


@pytest.mark.parametrize("probed", [
    None,  # the mail is in doubt: the rows alone cannot say
    {"mail": "yes"},  # not a bool
    {"mail": True, "charge": False},  # the charge is done: its rows say so
    {"mail": True, "notify": True},  # no such step
], ids=["no-answer", "not-a-bool", "step-not-in-doubt", "unknown-step"])
def test_a_step_in_doubt_needs_exactly_one_answer(mod, mail_in_doubt, probed):
    before = mail_in_doubt.rows()
    with pytest.raises(ValueError):
        said = mail_in_doubt.plan(mod, probed)
        pytest.fail(
            f"the probe's answers {probed} are not exactly one bool for each"
            " step in doubt (the mail), and the plan was made anyway instead"
            f" of a ValueError: {said}")
    assert mail_in_doubt.rows() == before, (
        f"refusing the probe's answers {probed} changed rows: a plan only reads")


def test_after_the_lease_the_probe_decides(mod, harness, tmp_path):
    """Killed after its admission to mail, a service that takes no token:
    the call may have left, or (were the worker only paused) may still. While
    its lease lasts the plan waits; once it is over (an injected instant) the
    probe decides, and only a found message settles it: "no message" is "not
    yet", in doubt, as the runtime's own compensation leaves it (issue 29)."""
    world = World(harness, tmp_path, "killed:admitted:mail")
    end = world.lease_end("mail")
    probed = world.probed()
    assert probed == {"mail": False}, (  # the provider never saw it
        f"{WORLD}the killed worker's mail was never to reach the provider;"
        f" the probe answered {probed}")
    expected = {"reserve": RELEASED, "charge": OWED, "mail": WAIT}

    def fate(plan):
        return {e["step"]: (e["action"], e["status"]) for e in plan}

    during = fate(world.plan(mod, probed, now=end - 1))
    assert during == expected, (
        "while the admitted mail's lease lasts its call may still leave, and"
        f" the plan did not wait: planned {during}, expected {expected}")
    later = world.plan(mod, probed, now=end + 1)
    assert fate(later) == expected, (  # after the lease, still only "not yet"
        "after the lease the provider's 'no message' was taken as final: a"
        " paused worker can still send, so it is 'not yet', in doubt;"
        f" planned {fate(later)}, expected {expected}")
    found = fate(world.plan(mod, {"mail": True}, now=end + 1))["mail"]
    assert found == SENT, (
        "after the lease a mail the probe found was not planned as sent, which"
        f" cannot be undone: planned {found}, expected {SENT}")
    with pytest.raises(ValueError):  # after the lease the probe is needed
        said = world.plan(mod, None, now=end + 1)
        pytest.fail("after the lease the mail in doubt was planned without the"
                    f" probe's answer instead of a ValueError: {said}")
    agrees(later, world.compensate(now=end + 1))


@pytest.mark.parametrize("step", ["reserve", "charge"])
def test_an_earlier_admitted_attempt_is_not_forgotten(mod, tmp_path, step):
    """Two attempts at ``step``, written through the runtime's own moves on an
    injected clock: the first ADMITTED (its call may have left; its worker
    died), the second, a replacement's, written after that lease and never
    admitted; then the person cancels. The reserve (fenced before its probe)
    is decided by the probe at once; the charge (no token) waits while the
    first lease lasts, and after it only a found payment settles it."""
    built = build_world(str(tmp_path), approved=True)
    wid, t0 = built["workflow_id"], 1_800_000_000.0
    with opened(built["paths"]["workflow"]) as conn:
        seen = workflow.read(conn, wid)
        version = workflow.transition(conn, wid, expected_state=seen["state"],
                                      expected_version=seen["version"],
                                      to_state=workflow.RUNNING, who="worker-1")
        if step == "charge":  # the reserve done first
            version = workflow_steps.attempt_step(
                conn, wid, "reserve", expected_version=version, who="worker-1",
                lease_s=10, now=t0 - 100)
            version = workflow_steps.record_outcome(
                conn, wid, "reserve", {"happened": True},
                expected_version=version, who="worker-1")
        first = workflow_steps.attempt_step(conn, wid, step,
                                            expected_version=version,
                                            who="worker-1", lease_s=10, now=t0)
        workflow_steps.admit(conn, wid, step, version=first, wait_s=1,
                             now=t0 + 1)
        second = workflow_steps.attempt_step(conn, wid, step,
                                             expected_version=first,
                                             who="worker-2", lease_s=10,
                                             now=t0 + 30)
        workflow.cancel(conn, wid, expected_version=second, who="person")
        attempts = workflow_steps.step_of(conn, wid, step)["attempts"]
        admitted = [a["admitted_at"] is not None for a in attempts]
        assert admitted == [True, False], (
            f"{WORLD}the first attempt at {step} was to be admitted and the second"
            f" not; admitted: {admitted}")

        def fate(probed, now):
            plan = mod.compensation_plan(conn, wid, probed, now)
            return {e["step"]: (e["action"], e["status"]) for e in plan}[step]

        last = "only the last attempt (never admitted) was read: an earlier"
        if step == "reserve":  # fenced: the probe decides, lease or no lease
            said = fate({step: True}, now=t0 + 5)
            assert said == RELEASED, (
                f"{last} admitted reservation the probe found was not released;"
                f" planned {said}, expected {RELEASED}")
            said = fate({step: False}, now=t0 + 5)
            assert said == NONE, (
                "the fenced supplier found no reservation, which is final, and"
                f" the plan did not say nothing to undo; planned {said},"
                f" expected {NONE}")
            with pytest.raises(ValueError):  # the rows cannot say
                said = mod.compensation_plan(conn, wid, None, t0 + 5)
                pytest.fail(f"{last} admitted reservation is in doubt and was"
                            f" planned without the probe's answer: {said}")
        else:
            said = fate(None, now=t0 + 5)
            assert said == WAIT, (  # the first lease still runs
                f"{last} admitted charge may still be in flight while its lease"
                f" runs, and the plan did not wait; planned {said},"
                f" expected {WAIT}")
            said = fate({step: True}, now=t0 + 35)
            assert said == OWED, (
                f"{last} admitted charge the probe found was not planned as a"
                f" refund owed; planned {said}, expected {OWED}")
            said = fate({step: False}, now=t0 + 35)
            assert said == WAIT, (  # not yet
                "after the lease the payment service's 'not found' was taken as"
                " final: a paused worker can still charge, so it is 'not yet';"
                f" planned {said}, expected {WAIT}")
        with pytest.raises(ValueError):  # the probe is needed: the rows cannot say
            said = mod.compensation_plan(conn, wid, None, t0 + 35)
            pytest.fail(f"{last} admitted {step} is in doubt after its lease and"
                        f" was planned without the probe's answer: {said}")
