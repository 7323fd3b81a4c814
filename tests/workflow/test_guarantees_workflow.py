"""The workflow's version-checked moves and its steps (chapter 08): each test
defends one guarantee against the one-line bug named in its docstring."""

from __future__ import annotations

import threading

import pytest

from crashcourse import workflow
from crashcourse.store import opened
from crashcourse.workflow import CANCELLED, PENDING, RUNNING, TransitionRefused
from crashcourse.workflow import steps as workflow_steps
from crashcourse.workflow.steps import Remote

WF = "wf-guarantee"
CHOICES = {"reserve": {"sku": "flour-25kg"}, "charge": {"amount_cents": 12900}}


def created(conn) -> None:
    """The workflow's tables, and workflow ``WF`` created with ``CHOICES``."""
    workflow_steps.install(conn)
    workflow.create(conn, WF, CHOICES, who="planner")


# ``conn`` (tests/conftest.py): a fresh store with the workflow created. The
# workflow's SQL is SQLite's alone: chapter 10 moves claims, fences, orders and
# the journal to a server, not the workflow.
pytestmark = [pytest.mark.installs.with_args(created),
              pytest.mark.sqlite_only("the workflow runs on SQLite alone")]


def start(conn) -> int:
    return workflow.transition(conn, WF, expected_state=PENDING, expected_version=0,
                               to_state=RUNNING, who="w")


def counting_remote(asked: list) -> Remote:
    """A remote whose every use is noted in ``asked``."""
    return Remote(lambda args, key, token: asked.append("call") or (
                      RUNNING, {"happened": True}),
                  lambda args, key: asked.append("probe") or (False, {}),
                  lambda args, key, token: asked.append("undo") or (
                      "released", workflow_steps.UNDONE, None, "undone"))


def test_the_right_version_with_the_wrong_state_is_refused(conn):
    """Bug: the compare-and-set checks the version and not the state."""
    version = start(conn)
    before = workflow_steps.snapshot(conn)
    with pytest.raises(TransitionRefused) as refused:
        workflow.transition(conn, WF, expected_state=PENDING,
                            expected_version=version, to_state=CANCELLED, who="x")
    assert refused.value.reason == workflow.STALE_VERSION
    assert workflow_steps.snapshot(conn) == before


def test_a_step_that_is_done_is_never_attempted_again(conn):
    """Bug: ``attempt_step`` lets a done step be attempted (a second call)."""
    version = workflow_steps.attempt_step(conn, WF, "reserve",
                                          expected_version=start(conn), who="w")
    version = workflow_steps.record_outcome(conn, WF, "reserve", {"happened": True},
                                            expected_version=version, who="w")
    before = workflow_steps.snapshot(conn)
    with pytest.raises(ValueError, match="done"):
        workflow_steps.attempt_step(conn, WF, "reserve", expected_version=version,
                                    who="w")
    assert workflow_steps.snapshot(conn) == before


@pytest.mark.parametrize("outcome", [{"happened": "yes"}, {"happened": 1},
                                     {"happened": None}])
def test_an_outcome_says_happened_as_a_bool(conn, outcome):
    """Bug: ``record_outcome`` accepts any "happened" value."""
    version = workflow_steps.attempt_step(conn, WF, "reserve",
                                          expected_version=start(conn), who="w")
    before = workflow_steps.snapshot(conn)
    with pytest.raises(ValueError, match="happened"):
        workflow_steps.record_outcome(conn, WF, "reserve", outcome,
                                      expected_version=version, who="w")
    assert workflow_steps.snapshot(conn) == before


def test_a_step_the_service_refused_needs_no_compensation(conn):
    """Bug: ``compensate`` treats a refused (not done) step as attempted."""
    version = workflow_steps.attempt_step(conn, WF, "reserve",
                                          expected_version=start(conn), who="w")
    version = workflow_steps.record_outcome(conn, WF, "reserve", {"happened": False},
                                            expected_version=version, who="w")
    workflow.cancel(conn, WF, expected_version=version, who="person")
    asked = []
    remotes = {step: counting_remote(asked) for step in CHOICES}
    report = workflow_steps.compensate(conn, WF, remotes, who="person")
    assert asked == []  # nobody was probed or undone
    assert report["compensations"] == []
    assert report["not_done"] == ["reserve", "charge"]


def test_the_report_of_a_live_workflow_is_not_final(conn):
    """Bug: ``final_report`` says final whatever the state."""
    start(conn)
    assert workflow_steps.final_report(conn, WF)["final"] is False
    workflow.cancel(conn, WF, expected_version=1, who="person")
    assert workflow_steps.final_report(conn, WF)["final"] is True


# --- attempts are held, not only versioned (issue 19) --------------------------
# Every instant is injected: T0 is when the first holder attempts; its lease
# (LEASE_S) is live before LIVE and over at OVER, on the store's clock.
T0 = 1_000_000.0
LIVE, OVER = T0 + 1, T0 + workflow_steps.LEASE_S + 1


def attempted(conn, step="reserve", admitted=False) -> int:
    """A holder starts the workflow and attempts ``step`` at T0; the attempt's
    version (its fencing token). With ``admitted`` its call was let out."""
    version = workflow_steps.attempt_step(conn, WF, step, expected_version=start(
        conn), who="holder", now=T0)
    if admitted:
        workflow_steps.admit(conn, WF, step, version=version, wait_s=1, now=T0)
    return version


def first_step(conn, name="reserve") -> dict:
    return workflow_steps.step_of(conn, WF, name)


def test_a_recovery_neither_probes_nor_calls_while_the_lease_is_live(conn):
    """Bug: ``advance_step`` probes a step in doubt whatever its attempt's lease
    says, so a paused holder and its replacement both call."""
    version = attempted(conn)
    asked = []
    before = workflow_steps.snapshot(conn)
    with pytest.raises(workflow_steps.AttemptHeld) as held:
        workflow_steps.advance_step(conn, WF, first_step(conn), counting_remote(asked),
                                version=version, who="recovery", now=LIVE)
    assert (held.value.who, held.value.version) == ("holder", version)
    assert held.value.left_s == pytest.approx(workflow_steps.LEASE_S - 1)
    assert asked == [] and workflow_steps.snapshot(conn) == before
    # once the lease is over the probe settles it, then the recovery calls
    workflow_steps.advance_step(conn, WF, first_step(conn), counting_remote(asked),
                            version=version, who="recovery", now=OVER)
    assert asked == ["probe", "call"]


def test_a_holder_paused_after_its_attempt_is_refused_before_its_call(conn):
    """Bug: ``call_step`` calls without ``admit`` (the version is checked only
    at the outcome, after the call): a holder frozen after its attempt calls
    again once its replacement has called."""
    paused = attempted(conn)
    step = first_step(conn)
    asked = []
    workflow_steps.advance_step(conn, WF, step, counting_remote(asked),
                            version=paused, who="recovery", now=OVER)
    assert asked == ["probe", "call"]  # the replacement called, once
    late = []
    with pytest.raises(workflow_steps.AdmissionRefused) as refused:
        workflow_steps.call_step(conn, WF, step, counting_remote(late),
                                 version=paused, who="holder", now=OVER + 1)
    assert refused.value.reason == workflow.STALE_VERSION
    assert late == []  # the paused holder called nothing


def test_a_call_whose_wait_outlives_the_lease_is_not_let_out(conn):
    """Bug: ``admit`` checks the version only: a holder paused until its
    lease nearly ran out still calls, and its call may land after the lease,
    when a recovery is allowed to call too."""
    version = attempted(conn)
    asked = []
    remote = counting_remote(asked)._replace(wait_s=2)
    before = workflow_steps.snapshot(conn)["workflow_steps"]
    with pytest.raises(workflow_steps.AdmissionRefused) as refused:
        workflow_steps.call_step(conn, WF, first_step(conn), remote, version=version,
                                 who="holder", now=T0 + workflow_steps.LEASE_S - 1)
    assert refused.value.reason == workflow_steps.LEASE_TOO_SHORT and asked == []
    [attempt] = workflow_steps.snapshot(conn)["workflow_steps"]
    assert attempt["admitted_at"] is None  # and it handed its lease back
    assert attempt["expires"] == T0 + workflow_steps.LEASE_S - 1 < before[0][
        "expires"]


def test_compensate_leaves_an_admitted_call_in_doubt_while_its_lease_is_live(conn):
    """Bug: ``compensate`` probes an attempt that may still be in flight and
    writes a permanent nothing_to_undo for a call its holder then makes."""
    version = attempted(conn, admitted=True)
    workflow.cancel(conn, WF, expected_version=version, who="person")
    asked = []
    remotes = {step: counting_remote(asked) for step in CHOICES}
    report = workflow_steps.compensate(conn, WF, remotes, who="person", now=LIVE)
    assert report["in_doubt"] == ["reserve"] and report["compensations"] == []
    assert asked == []
    # after the lease, the probe decides (here: the effect exists: undone)
    found = {step: counting_remote(asked)._replace(
        probe=lambda args, key: (True, {"copies": 1})) for step in CHOICES}
    report = workflow_steps.compensate(conn, WF, found, who="person", now=OVER)
    assert report["in_doubt"] == [] and report["undone"] == ["reserve"]


def test_a_holder_refused_at_its_outcome_hands_its_lease_back(conn):
    """Bug: a holder whose outcome is refused keeps its lease, and every
    recovery or compensation waits it out for nothing."""
    version = attempted(conn)
    step = first_step(conn)
    moved = []
    remote = counting_remote([])._replace(call=lambda args, key, token: (
        moved.append(workflow.cancel(conn, WF, expected_version=version,
                                     who="person")) or (RUNNING, {"happened": True})))
    with pytest.raises(TransitionRefused):  # the cancel came during its call
        workflow_steps.call_step(conn, WF, step, remote, version=version,
                                 who="holder", now=LIVE)
    [attempt] = first_step(conn)["attempts"]
    assert attempt["admitted_at"] == LIVE and attempt["expires"] == LIVE
    remotes = {name: counting_remote([])._replace(
        probe=lambda args, key: (True, {})) for name in CHOICES}
    report = workflow_steps.compensate(conn, WF, remotes, who="person", now=LIVE)
    assert report["undone"] == ["reserve"] and report["in_doubt"] == []


def test_the_admission_reads_the_version_inside_its_own_write_lock(tmp_path):
    """Bug: ``admit`` reads the workflow before it takes the write lock: a
    cancel that commits while the admission waits for that lock is not seen,
    and the call is let out after the cancel. A second connection holds the
    lock with its cancel until the admission has asked for it."""
    path = tmp_path / "workflow.sqlite"
    with opened(path) as conn:
        workflow_steps.install(conn)
        workflow.create(conn, WF, CHOICES, who="planner")
        version = attempted(conn)
    asking, outcome = threading.Event(), []

    def admission():  # the holder, on its own connection
        with opened(path) as holder:
            holder.set_trace_callback(
                lambda sql: asking.set() if sql.startswith("BEGIN") else None)
            try:
                outcome.append(workflow_steps.admit(holder, WF, "reserve",
                                                    version=version, wait_s=1,
                                                    now=LIVE))
            except workflow_steps.AdmissionRefused as refused:
                outcome.append(refused.reason)

    with opened(path) as person:
        person.execute("BEGIN IMMEDIATE")  # the person's cancel, not committed yet
        workflow.move(person, WF, RUNNING, version, CANCELLED, "person", "cancel")
        waiting = threading.Thread(target=admission)
        waiting.start()
        assert asking.wait(30)  # the admission has asked for the write lock
        person.execute("COMMIT")
        waiting.join(30)
    assert outcome == [workflow.STALE_VERSION]


# --- an attempt's lease, at its edges and among other workflows --------------
OTHER = "wf-other"


def attempted_in(conn, workflow_id: str, step: str = "reserve") -> int:
    """``attempted`` for another workflow in the same store, at the same
    versions (both start at 1 and attempt at 2): only the id tells them apart."""
    workflow.create(conn, workflow_id, CHOICES, who="planner")
    started = workflow.transition(conn, workflow_id, expected_state=PENDING,
                                  expected_version=0, to_state=RUNNING, who="w")
    return workflow_steps.attempt_step(conn, workflow_id, step,
                                       expected_version=started, who="other",
                                       now=T0)


def attempts(conn, workflow_id: str) -> list[dict]:
    return [row for row in workflow_steps.snapshot(conn)["workflow_steps"]
            if row["workflow_id"] == workflow_id and row["phase"] == "attempt"]


def test_an_attempt_is_held_for_five_seconds_unless_told(conn):
    """Bug: the default lease is another length than the 5 s chapter 08
    states (every wait-out of a dead holder is timed by it)."""
    version = attempted(conn)
    assert workflow_steps.attempt_at(conn, WF, version)["expires"] == T0 + 5.0


def test_a_wait_exactly_as_long_as_the_lease_left_is_not_let_out(conn):
    """Bug: ``admit`` lets out a call whose declared wait ENDS exactly when
    the lease does (``<=`` for ``<``): the call may land as the lease ends,
    when a recovery may call too. The store's clock is injected at the edge."""
    version = attempted(conn)
    at = T0 + 1.0
    left = T0 + workflow_steps.LEASE_S - at
    with pytest.raises(workflow_steps.AdmissionRefused) as refused:
        workflow_steps.admit(conn, WF, "reserve", version=version, wait_s=left,
                             now=at)
    assert refused.value.reason == workflow_steps.LEASE_TOO_SHORT
    assert workflow_steps.attempt_at(conn, WF, version)["admitted_at"] is None
    assert workflow_steps.admit(conn, WF, "reserve", version=version,
                                wait_s=left - 0.001, now=at) == at


def test_an_admission_stamps_its_own_attempt_and_no_other(conn):
    """Bug: the admission's stamp lands on every workflow's attempt at that
    version (its ``workflow_id`` dropped): another workflow's call then reads
    as let out, and compensation waits for a call that never left."""
    version = attempted(conn)
    assert attempted_in(conn, OTHER) == version  # the same version number
    workflow_steps.admit(conn, WF, "reserve", version=version, wait_s=1, now=T0)
    assert [a["admitted_at"] for a in attempts(conn, WF)] == [T0]
    assert [a["admitted_at"] for a in attempts(conn, OTHER)] == [None]


@pytest.mark.parametrize("which", ["a version that is no attempt",
                                   "another step's attempt"])
def test_an_admission_is_only_for_the_attempt_it_names(conn, which):
    """Bug: ``admit`` lets a call out for a version that is not an attempt
    of that step (the start's version, another step's attempt)."""
    if which == "another step's attempt":
        version, step = attempted(conn, "reserve"), "charge"
    else:
        version, step = start(conn), "reserve"
    before = workflow_steps.snapshot(conn)
    with pytest.raises(ValueError, match="no attempt"):
        workflow_steps.admit(conn, WF, step, version=version, wait_s=1, now=T0)
    assert workflow_steps.snapshot(conn) == before


def test_a_lease_handed_back_is_that_attempts_alone(conn):
    """Bug: ``release_lease`` ends more than the attempt it names (its
    ``workflow_id`` or ``version`` dropped): another workflow's holder, or
    this workflow's other step in doubt, loses its lease while it may still
    call, and a recovery calls beside it."""
    reserve = attempted(conn)
    charge = workflow_steps.attempt_step(conn, WF, "charge",
                                         expected_version=reserve, who="holder",
                                         now=T0)
    assert attempted_in(conn, OTHER) == reserve  # the same version number
    assert workflow_steps.release_lease(conn, WF, reserve, now=LIVE) is True
    assert {a["version"]: a["expires"] for a in attempts(conn, WF)} == {
        reserve: LIVE, charge: T0 + 5.0}
    assert [a["expires"] for a in attempts(conn, OTHER)] == [T0 + 5.0]


@pytest.mark.parametrize("late", [0.0, 1.0], ids=["at its end", "after it"])
def test_a_lease_already_over_is_left_as_it_ended(conn, late):
    """Bug: ``release_lease`` rewrites a lease that had already ended (at
    its exact end, or after), moving its end later, and says it ended one."""
    version = attempted(conn)
    end = T0 + workflow_steps.LEASE_S
    assert workflow_steps.release_lease(conn, WF, version, now=end + late) is False
    assert workflow_steps.attempt_at(conn, WF, version)["expires"] == end
