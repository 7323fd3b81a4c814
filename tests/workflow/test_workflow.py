"""The workflow's store (chapter 08): one compare-and-set per move, a history
row per move, steps around remote calls, compensations, the final report."""

from __future__ import annotations

import threading

import pytest

from crashcourse import workflow
from crashcourse.effects import operation_key
from crashcourse.figures import workflow as workflow_figures
from crashcourse.store import opened
from crashcourse.workflow import (
    APPLIED,
    CANCELLED,
    FAILED,
    FINAL,
    MOVES,
    PENDING,
    RUNNING,
    STATES,
    WAITING,
    TransitionRefused,
)
from crashcourse.workflow import steps as workflow_steps
from crashcourse.workflow.steps import Remote

CHOICES = {"reserve": {"sku": "flour-25kg", "quantity": 6},
             "charge": {"amount_cents": 12900},
             "mail": {"to": "owner@shop.example"}}
WF = "wf-1"


def created(conn) -> None:
    """The workflow's tables, and workflow ``WF`` created with ``CHOICES``."""
    workflow_steps.install(conn)
    workflow.create(conn, WF, CHOICES, who="planner")


# ``conn`` (tests/conftest.py): a fresh store with the workflow created, on
# each backend: the workflow's SQL is the same on SQLite and on a server (its
# leases on the store's clock, its snapshot in each table's key order).
pytestmark = pytest.mark.installs.with_args(created)


def rows(conn) -> dict:
    return workflow_steps.snapshot(conn)


def move(conn, state, version, to, who="w"):
    return workflow.transition(conn, WF, expected_state=state,
                               expected_version=version, to_state=to, who=who)


def test_create_records_pending_at_version_0_with_keys_derived_once(conn):
    seen = workflow.read(conn, WF)
    assert (seen["state"], seen["version"]) == (PENDING, 0)
    assert [d["step"] for d in seen["choices"]] == list(CHOICES)
    assert [d["operation_key"] for d in seen["choices"]] == [
        operation_key(WF, n, step, args)
        for n, (step, args) in enumerate(CHOICES.items(), start=1)]
    [created] = workflow.history(conn, WF)
    assert (created["from_state"], created["to_state"], created["who"]) == (
        None, PENDING, "planner")


def test_a_move_is_one_version_and_one_history_row(conn):
    assert move(conn, PENDING, 0, RUNNING, who="worker") == 1
    assert move(conn, RUNNING, 1, RUNNING) == 2
    assert move(conn, RUNNING, 2, APPLIED) == 3
    history = workflow.history(conn, WF)
    assert [(h["version"], h["from_state"], h["to_state"]) for h in history] == [
        (0, None, PENDING), (1, PENDING, RUNNING), (2, RUNNING, RUNNING),
        (3, RUNNING, APPLIED)]
    assert history[1]["who"] == "worker"


def test_a_stale_version_is_refused_and_nothing_is_written(conn):
    move(conn, PENDING, 0, RUNNING)
    before = rows(conn)
    with pytest.raises(TransitionRefused) as refused:
        move(conn, PENDING, 0, RUNNING)  # what a second worker read earlier
    assert refused.value.reason == workflow.STALE_VERSION
    assert refused.value.current == {"state": RUNNING, "version": 1}
    with pytest.raises(TransitionRefused, match="stale_version"):
        move(conn, RUNNING, 0, RUNNING)  # right state, old version
    assert rows(conn) == before


@pytest.mark.parametrize("source, to", [
    (PENDING, APPLIED), (PENDING, WAITING), (WAITING, APPLIED),
    (APPLIED, RUNNING), (CANCELLED, RUNNING), (FAILED, CANCELLED)])
def test_a_move_not_in_the_table_is_refused_and_nothing_is_written(conn, source,
                                                                  to):
    before = rows(conn)
    with pytest.raises(TransitionRefused) as refused:
        move(conn, source, 0, to)
    assert refused.value.reason == workflow.ILLEGAL_MOVE
    assert rows(conn) == before


def test_the_table_of_moves_is_closed_and_final_states_are_final():
    assert {state for move in MOVES for state in move} == set(STATES)
    assert not [move for move in MOVES if move[0] in FINAL]
    assert (RUNNING, RUNNING) in MOVES
    assert {source for source, to in MOVES if to == CANCELLED} == {
        PENDING, RUNNING, WAITING}


@pytest.mark.parametrize("changes, error", [
    ({"expected_state": "paused"}, ValueError),
    ({"to_state": "done"}, ValueError),
    ({"expected_version": -1}, ValueError),
    ({"expected_version": True}, TypeError),
    ({"expected_version": "0"}, TypeError),
    ({"who": " "}, ValueError),
    ({"note": ""}, ValueError),
])
def test_bad_input_is_a_clear_error_and_nothing_is_written(conn, changes, error):
    before = rows(conn)
    args = {"expected_state": PENDING, "expected_version": 0, "to_state": RUNNING,
            "who": "w", **changes}
    with pytest.raises(error):
        workflow.transition(conn, WF, **args)
    assert rows(conn) == before


def test_an_unknown_workflow_is_a_key_error_and_nothing_is_written(conn):
    before = rows(conn)
    with pytest.raises(KeyError):
        workflow.transition(conn, "nope", expected_state=PENDING,
                            expected_version=0, to_state=RUNNING, who="w")
    with pytest.raises(KeyError):
        workflow.cancel(conn, "nope", expected_version=0, who="person")
    assert rows(conn) == before


@pytest.mark.parametrize("workflow_id, choices", [
    ("", CHOICES), ("has space", CHOICES), ("a/b", CHOICES),
    ("wf-2", {}), ("wf-2", []), ("wf-2", {"Bad Step": {}}),
    ("wf-2", {"reserve": "six sacks"}), ("wf-2", {"reserve": {"n": float("nan")}}),
    (WF, CHOICES),  # exists already
])
def test_create_refuses_bad_input_and_writes_nothing(conn, workflow_id, choices):
    before = rows(conn)
    with pytest.raises(ValueError):
        workflow.create(conn, workflow_id, choices, who="planner")
    assert rows(conn) == before


@pytest.mark.parametrize("state_at", [PENDING, RUNNING, WAITING])
def test_cancel_is_legal_from_every_live_state(conn, state_at):
    version = 0
    if state_at != PENDING:
        version = move(conn, PENDING, 0, RUNNING)
    if state_at == WAITING:
        version = move(conn, RUNNING, version, WAITING)
    assert workflow.cancel(conn, WF, expected_version=version,
                           who="person") == version + 1
    last = workflow.history(conn, WF)[-1]
    assert (last["from_state"], last["to_state"], last["who"]) == (
        state_at, CANCELLED, "person")


def test_cancel_is_refused_when_stale_or_final(conn):
    move(conn, PENDING, 0, RUNNING)
    with pytest.raises(TransitionRefused, match="stale_version"):
        workflow.cancel(conn, WF, expected_version=0, who="person")
    move(conn, RUNNING, 1, APPLIED)
    before = rows(conn)
    with pytest.raises(TransitionRefused, match="illegal_move"):
        workflow.cancel(conn, WF, expected_version=2, who="person")
    assert rows(conn) == before


def statuses(conn) -> dict:
    return {s["step"]: s["status"] for s in workflow_steps.progress(conn, WF)}


def test_an_attempt_then_an_outcome_make_a_step_done(conn):
    version = move(conn, PENDING, 0, RUNNING)
    assert set(statuses(conn).values()) == {workflow_steps.NOT_STARTED}
    version = workflow_steps.attempt_step(conn, WF, "reserve",
                                          expected_version=version, who="w")
    assert statuses(conn)["reserve"] == workflow_steps.IN_DOUBT
    version = workflow_steps.record_outcome(conn, WF, "reserve", {"happened": True},
                                            expected_version=version, who="w")
    assert statuses(conn)["reserve"] == workflow_steps.DONE
    phases = [(r["version"], r["phase"]) for r in rows(conn)["workflow_steps"]]
    assert phases == [(2, "attempt"), (3, "outcome")]  # one row per transition
    version = workflow_steps.attempt_step(conn, WF, "charge",
                                          expected_version=version, who="w")
    workflow_steps.record_outcome(conn, WF, "charge", {"happened": False},
                                  expected_version=version, who="w",
                                  to_state=WAITING)
    assert statuses(conn)["charge"] == workflow_steps.NOT_DONE
    assert workflow.read(conn, WF)["state"] == WAITING


def test_step_rows_refuse_what_makes_no_sense_and_write_nothing(conn):
    version = move(conn, PENDING, 0, RUNNING)
    before = rows(conn)
    for bad in (
        lambda: workflow_steps.record_outcome(conn, WF, "reserve",
                                              {"happened": True},
                                              expected_version=version, who="w"),
        lambda: workflow_steps.attempt_step(conn, WF, "refund",
                                            expected_version=version, who="w"),
        lambda: workflow_steps.record_outcome(conn, WF, "reserve", {"ok": 1},
                                              expected_version=version, who="w"),
    ):
        with pytest.raises(ValueError):
            bad()
    assert rows(conn) == before


def test_a_stale_worker_is_refused_before_its_step_is_judged(conn):
    """The loser of a race sees stale_version, not a complaint about the step."""
    version = move(conn, PENDING, 0, RUNNING)
    attempt = workflow_steps.attempt_step(conn, WF, "mail", expected_version=version,
                                          who="a")
    workflow_steps.record_outcome(conn, WF, "mail", {"happened": True},
                                  expected_version=attempt, who="a")
    with pytest.raises(TransitionRefused, match="stale_version"):
        workflow_steps.record_outcome(conn, WF, "mail", {"happened": True},
                                      expected_version=attempt, who="b")


def fake_remote(happened: bool, calls: list) -> Remote:
    return Remote(lambda args, key, token: calls.append(token) or (
                      RUNNING, {"happened": True}),
                  lambda args, key: (happened, {"asked": key}),
                  lambda args, key, token: ("released", workflow_steps.UNDONE,
                                            "undo-key", "undone"))


T0 = 1_000_000.0  # an injected instant: every lease below is read against it
LATER = T0 + workflow_steps.LEASE_S + 1  # after any lease taken at T0


@pytest.mark.parametrize("happened, calls_expected", [(True, 0), (False, 1)])
def test_a_step_in_doubt_is_probed_before_any_call(conn, happened, calls_expected):
    version = move(conn, PENDING, 0, RUNNING)
    version = workflow_steps.attempt_step(conn, WF, "reserve", now=T0,
                                          expected_version=version, who="dead")
    calls = []
    step = workflow_steps.progress(conn, WF)[0]
    state, version = workflow_steps.advance_step(conn, WF, step,
                                             fake_remote(happened, calls),
                                             version=version, who="w", now=LATER)
    assert (state, len(calls)) == (RUNNING, calls_expected)
    assert statuses(conn)["reserve"] == workflow_steps.DONE
    assert ("probed" in workflow_steps.progress(conn, WF)[0]["outcome"]) == happened
    if calls:
        assert calls == [(WF, version - 1)]  # the attempt's version is the token


def test_an_attempt_carries_its_lease_and_its_admission(conn):
    version = workflow_steps.attempt_step(conn, WF, "reserve", now=T0, lease_s=8,
                                          expected_version=move(conn, PENDING, 0,
                                                                RUNNING), who="w")
    [held] = workflow_steps.progress(conn, WF)[0]["attempts"]
    assert held == {"version": version, "who": "w", "expires": T0 + 8,
                    "admitted_at": None}
    assert workflow_steps.admit(conn, WF, "reserve", version=version, wait_s=2,
                                now=T0 + 1) == T0 + 1
    [held] = workflow_steps.progress(conn, WF)[0]["attempts"]
    assert held["admitted_at"] == T0 + 1
    workflow_steps.record_outcome(conn, WF, "reserve", {"happened": True},
                                  expected_version=version, who="w")
    assert workflow_steps.progress(conn, WF)[0]["attempts"] == []  # settled


@pytest.mark.parametrize("lease_s", [0, -1, float("inf"), float("nan"), True, "8"])
def test_a_lease_is_seconds_above_zero(conn, lease_s):
    version = move(conn, PENDING, 0, RUNNING)
    before = rows(conn)
    with pytest.raises(ValueError, match="lease_s"):
        workflow_steps.attempt_step(conn, WF, "reserve", lease_s=lease_s,
                                    expected_version=version, who="w")
    assert rows(conn) == before


def cancelled_with_three_kinds_of_step(conn, admitted=True) -> None:
    """reserve done, charge in doubt (admitted at T0, or not), mail untouched."""
    version = move(conn, PENDING, 0, RUNNING)
    for step, outcome in (("reserve", {"happened": True}), ("charge", None)):
        version = workflow_steps.attempt_step(conn, WF, step, now=T0,
                                              expected_version=version, who="w")
        if outcome:
            version = workflow_steps.record_outcome(
                conn, WF, step, outcome, expected_version=version, who="w")
        elif admitted:
            workflow_steps.admit(conn, WF, step, version=version, wait_s=1,
                                 now=T0)
    workflow.cancel(conn, WF, expected_version=version, who="person")


@pytest.mark.parametrize("found", [True, False])
def test_compensate_settles_each_attempted_step_once(conn, found):
    """An admitted charge the probe does not find, at a service that takes no
    token, is NOT written off as nothing_to_undo (issue 29): its holder may
    be paused after its admission, past its lease, and charge later. It stays
    in doubt, with no row, until a later probe finds the effect."""
    cancelled_with_three_kinds_of_step(conn)  # reserve done, charge in doubt
    remotes = {step: fake_remote(found, []) for step in CHOICES}
    report = workflow_steps.compensate(conn, WF, remotes, who="person", now=LATER)
    fate = {c["step"]: c["status"] for c in report["compensations"]}
    assert fate == ({"reserve": workflow_steps.UNDONE, "charge": workflow_steps.UNDONE}
                    if found else {"reserve": workflow_steps.UNDONE})
    assert report["state"] == CANCELLED and report["final"]
    assert report["completed"] == (["reserve", "charge"] if found else ["reserve"])
    assert report["in_doubt"] == ([] if found else ["charge"])
    assert report["not_done"] == ["mail"]
    assert report["undone"] == report["completed"]
    before = rows(conn)
    workflow_steps.compensate(conn, WF, remotes, who="person", now=LATER)
    assert rows(conn) == before  # again: no change
    # the late charge lands; the next probe finds it and the step is settled
    late = {step: fake_remote(True, []) for step in CHOICES}
    report = workflow_steps.compensate(conn, WF, late, who="person", now=LATER)
    assert report["undone"] == ["reserve", "charge"] and report["in_doubt"] == []


def fenced_remote(found: bool, asked: list) -> Remote:
    """A remote at a service that takes the token: its uses noted in order."""
    return Remote(lambda args, key, token: asked.append("call") or (
                      RUNNING, {"happened": True}),
                  lambda args, key: asked.append("probe") or (found, {}),
                  lambda args, key, token: asked.append("undo") or (
                      "released", workflow_steps.UNDONE, None, "undone"),
                  fence=lambda token: asked.append(("fence", token)))


@pytest.mark.parametrize("found", [True, False])
def test_a_fenced_service_is_probed_after_its_fence_lease_or_no_lease(conn, found):
    """At a service that takes the token, the cancel's fence is raised first,
    then the probe decides, even while the holder's lease is live: from the
    fence's commit on no call of an earlier version can land (issue 29)."""
    cancelled_with_three_kinds_of_step(conn)  # charge admitted at T0, lease live
    cancelled_at = workflow.read(conn, WF)["version"]
    asked = []
    remotes = {step: fenced_remote(found, asked) for step in CHOICES}
    report = workflow_steps.compensate(conn, WF, remotes, who="person", now=T0 + 1)
    assert asked == ["undo", ("fence", (WF, cancelled_at)), "probe",
                     *(["undo"] if found else [])]  # reserve done: undone first
    charge = next(c for c in report["compensations"] if c["step"] == "charge")
    assert charge["status"] == (workflow_steps.UNDONE if found
                                else workflow_steps.NOTHING_TO_UNDO)
    assert report["in_doubt"] == []


def test_an_unconfirmed_fence_writes_nothing_for_its_step(conn):
    """The fence is not known to hold (the supplier down, an answer lost):
    that step is not asked and gets no row; it stays in doubt (issue 29)."""
    cancelled_with_three_kinds_of_step(conn)
    asked = []

    def down(token):
        raise ConnectionRefusedError("the supplier is down")

    remotes = {step: fenced_remote(False, asked)._replace(fence=down)
               for step in CHOICES}
    with pytest.raises(OSError):
        workflow_steps.compensate(conn, WF, remotes, who="person", now=LATER)
    assert asked == ["undo"]  # the reserve, done, was undone; charge not asked
    report = workflow_steps.final_report(conn, WF)
    assert report["in_doubt"] == ["charge"] and report["undone"] == ["reserve"]


def test_an_attempt_never_admitted_has_nothing_to_undo_without_asking(conn):
    """The cancel moved the version: that attempt's call can never be admitted,
    lease or no lease, so nobody need wait for it or ask the service."""
    cancelled_with_three_kinds_of_step(conn, admitted=False)
    asked = []
    remotes = {step: fake_remote(True, asked) for step in CHOICES}
    report = workflow_steps.compensate(conn, WF, remotes, who="person", now=T0 + 1)
    charge = [c for c in report["compensations"] if c["step"] == "charge"]
    assert [c["status"] for c in charge] == [workflow_steps.NOTHING_TO_UNDO]
    assert "never admitted" in charge[0]["note"] and report["in_doubt"] == []


def test_the_final_report_shows_a_step_in_doubt_before_compensation(conn):
    cancelled_with_three_kinds_of_step(conn)
    report = workflow_steps.final_report(conn, WF)
    assert (report["completed"], report["in_doubt"], report["not_done"]) == (
        ["reserve"], ["charge"], ["mail"])


def test_compensation_is_only_for_a_stopped_workflow_and_written_once(conn):
    move(conn, PENDING, 0, RUNNING)
    before = rows(conn)
    with pytest.raises(ValueError, match="running"):
        workflow_steps.compensate(conn, WF, {}, who="person")
    with pytest.raises(ValueError):
        workflow_steps.record_compensation(conn, WF, "reserve", action="released",
                                           status=workflow_steps.UNDONE,
                                           note="n", who="p")
    assert rows(conn) == before
    workflow.cancel(conn, WF, expected_version=1, who="person")
    with pytest.raises(ValueError, match="status"):
        workflow_steps.record_compensation(conn, WF, "reserve", action="x",
                                           status="maybe", note="n", who="p")
    first = workflow_steps.record_compensation(
        conn, WF, "mail", action="cannot_unsend",
        status=workflow_steps.CANNOT_UNDO, note="a sent mail", who="p")
    again = workflow_steps.record_compensation(
        conn, WF, "mail", action="other", status=workflow_steps.UNDONE,
        note="n", who="p")
    assert (first, again) == (True, False)
    [row] = rows(conn)["compensations"]
    assert (row["action"], row["operation_key"]) == (
        "cannot_unsend", workflow.read(conn, WF)["choices"][2]["operation_key"])


def test_the_state_diagram_is_drawn_from_the_table():
    fig = workflow_figures.state_diagram(MOVES, STATES, taken={(PENDING, RUNNING): 1})
    ax = fig.axes[0]
    assert len(ax.patches) == len(MOVES)  # one arrow per legal move
    labels = {text.get_text() for text in ax.texts}
    assert {state.replace("_", " ") for state in STATES} <= labels
    assert tuple(fig.get_size_inches()) == (7.5, 4.0)


# --- guarantees (was tests/test_guarantees_workflow.py): the version-checked
# moves and the steps, each test defending one guarantee against the one-line
# bug named in its docstring, on a workflow of two steps of their own.
WF2 = "wf-guarantee"
CHOICES2 = {"reserve": {"sku": "flour-25kg"}, "charge": {"amount_cents": 12900}}


def guarded_created(conn) -> None:
    """The workflow's tables, and ``WF2`` created with ``CHOICES2``."""
    workflow_steps.install(conn)
    workflow.create(conn, WF2, CHOICES2, who="planner")


guarded = pytest.mark.installs.with_args(guarded_created)  # ``conn``'s store


def start(conn) -> int:
    return workflow.transition(conn, WF2, expected_state=PENDING, expected_version=0,
                               to_state=RUNNING, who="w")


def counting_remote(asked: list) -> Remote:
    """A remote whose every use is noted in ``asked``."""
    return Remote(lambda args, key, token: asked.append("call") or (
                      RUNNING, {"happened": True}),
                  lambda args, key: asked.append("probe") or (False, {}),
                  lambda args, key, token: asked.append("undo") or (
                      "released", workflow_steps.UNDONE, None, "undone"))


@guarded
def test_the_right_version_with_the_wrong_state_is_refused(conn):
    """Bug: the compare-and-set checks the version and not the state."""
    version = start(conn)
    before = workflow_steps.snapshot(conn)
    with pytest.raises(TransitionRefused) as refused:
        workflow.transition(conn, WF2, expected_state=PENDING,
                            expected_version=version, to_state=CANCELLED, who="x")
    assert refused.value.reason == workflow.STALE_VERSION
    assert workflow_steps.snapshot(conn) == before


@guarded
def test_a_step_that_is_done_is_never_attempted_again(conn):
    """Bug: ``attempt_step`` lets a done step be attempted (a second call)."""
    version = workflow_steps.attempt_step(conn, WF2, "reserve",
                                          expected_version=start(conn), who="w")
    version = workflow_steps.record_outcome(conn, WF2, "reserve", {"happened": True},
                                            expected_version=version, who="w")
    before = workflow_steps.snapshot(conn)
    with pytest.raises(ValueError, match="done"):
        workflow_steps.attempt_step(conn, WF2, "reserve", expected_version=version,
                                    who="w")
    assert workflow_steps.snapshot(conn) == before


@guarded
@pytest.mark.parametrize("outcome", [{"happened": "yes"}, {"happened": 1},
                                     {"happened": None}])
def test_an_outcome_says_happened_as_a_bool(conn, outcome):
    """Bug: ``record_outcome`` accepts any "happened" value."""
    version = workflow_steps.attempt_step(conn, WF2, "reserve",
                                          expected_version=start(conn), who="w")
    before = workflow_steps.snapshot(conn)
    with pytest.raises(ValueError, match="happened"):
        workflow_steps.record_outcome(conn, WF2, "reserve", outcome,
                                      expected_version=version, who="w")
    assert workflow_steps.snapshot(conn) == before


@guarded
def test_a_step_the_service_refused_needs_no_compensation(conn):
    """Bug: ``compensate`` treats a refused (not done) step as attempted."""
    version = workflow_steps.attempt_step(conn, WF2, "reserve",
                                          expected_version=start(conn), who="w")
    version = workflow_steps.record_outcome(conn, WF2, "reserve", {"happened": False},
                                            expected_version=version, who="w")
    workflow.cancel(conn, WF2, expected_version=version, who="person")
    asked = []
    remotes = {step: counting_remote(asked) for step in CHOICES2}
    report = workflow_steps.compensate(conn, WF2, remotes, who="person")
    assert asked == []  # nobody was probed or undone
    assert report["compensations"] == []
    assert report["not_done"] == ["reserve", "charge"]


@guarded
def test_the_report_of_a_live_workflow_is_not_final(conn):
    """Bug: ``final_report`` says final whatever the state."""
    start(conn)
    assert workflow_steps.final_report(conn, WF2)["final"] is False
    workflow.cancel(conn, WF2, expected_version=1, who="person")
    assert workflow_steps.final_report(conn, WF2)["final"] is True


# --- attempts are held, not only versioned (issue 19) --------------------------
# Every instant is injected: T0 is when the first holder attempts; its lease
# (LEASE_S) is live before LIVE and over at OVER, on the store's clock.
LIVE, OVER = T0 + 1, T0 + workflow_steps.LEASE_S + 1


def attempted(conn, step="reserve", admitted=False) -> int:
    """A holder starts the workflow and attempts ``step`` at T0; the attempt's
    version (its fencing token). With ``admitted`` its call was let out."""
    version = workflow_steps.attempt_step(conn, WF2, step, expected_version=start(
        conn), who="holder", now=T0)
    if admitted:
        workflow_steps.admit(conn, WF2, step, version=version, wait_s=1, now=T0)
    return version


def first_step(conn, name="reserve") -> dict:
    return workflow_steps.step_of(conn, WF2, name)


@guarded
def test_a_recovery_neither_probes_nor_calls_while_the_lease_is_live(conn):
    """Bug: ``advance_step`` probes a step in doubt whatever its attempt's lease
    says, so a paused holder and its replacement both call."""
    version = attempted(conn)
    asked = []
    before = workflow_steps.snapshot(conn)
    with pytest.raises(workflow_steps.AttemptHeld) as held:
        workflow_steps.advance_step(conn, WF2, first_step(conn), counting_remote(asked),
                                version=version, who="recovery", now=LIVE)
    assert (held.value.who, held.value.version) == ("holder", version)
    assert held.value.left_s == pytest.approx(workflow_steps.LEASE_S - 1)
    assert asked == [] and workflow_steps.snapshot(conn) == before
    # once the lease is over the probe settles it, then the recovery calls
    workflow_steps.advance_step(conn, WF2, first_step(conn), counting_remote(asked),
                            version=version, who="recovery", now=OVER)
    assert asked == ["probe", "call"]


@guarded
def test_a_holder_paused_after_its_attempt_is_refused_before_its_call(conn):
    """Bug: ``call_step`` calls without ``admit`` (the version is checked only
    at the outcome, after the call): a holder frozen after its attempt calls
    again once its replacement has called."""
    paused = attempted(conn)
    step = first_step(conn)
    asked = []
    workflow_steps.advance_step(conn, WF2, step, counting_remote(asked),
                            version=paused, who="recovery", now=OVER)
    assert asked == ["probe", "call"]  # the replacement called, once
    late = []
    with pytest.raises(workflow_steps.AdmissionRefused) as refused:
        workflow_steps.call_step(conn, WF2, step, counting_remote(late),
                                 version=paused, who="holder", now=OVER + 1)
    assert refused.value.reason == workflow.STALE_VERSION
    assert late == []  # the paused holder called nothing


@guarded
def test_a_call_whose_wait_outlives_the_lease_is_not_let_out(conn):
    """Bug: ``admit`` checks the version only: a holder paused until its
    lease nearly ran out still calls, and its call may land after the lease,
    when a recovery is allowed to call too."""
    version = attempted(conn)
    asked = []
    remote = counting_remote(asked)._replace(wait_s=2)
    before = workflow_steps.snapshot(conn)["workflow_steps"]
    with pytest.raises(workflow_steps.AdmissionRefused) as refused:
        workflow_steps.call_step(conn, WF2, first_step(conn), remote, version=version,
                                 who="holder", now=T0 + workflow_steps.LEASE_S - 1)
    assert refused.value.reason == workflow_steps.LEASE_TOO_SHORT and asked == []
    [attempt] = workflow_steps.snapshot(conn)["workflow_steps"]
    assert attempt["admitted_at"] is None  # and it handed its lease back
    assert attempt["expires"] == T0 + workflow_steps.LEASE_S - 1 < before[0][
        "expires"]


@guarded
def test_compensate_leaves_an_admitted_call_in_doubt_while_its_lease_is_live(conn):
    """Bug: ``compensate`` probes an attempt that may still be in flight and
    writes a permanent nothing_to_undo for a call its holder then makes."""
    version = attempted(conn, admitted=True)
    workflow.cancel(conn, WF2, expected_version=version, who="person")
    asked = []
    remotes = {step: counting_remote(asked) for step in CHOICES2}
    report = workflow_steps.compensate(conn, WF2, remotes, who="person", now=LIVE)
    assert report["in_doubt"] == ["reserve"] and report["compensations"] == []
    assert asked == []
    # after the lease, the probe decides (here: the effect exists: undone)
    found = {step: counting_remote(asked)._replace(
        probe=lambda args, key: (True, {"copies": 1})) for step in CHOICES2}
    report = workflow_steps.compensate(conn, WF2, found, who="person", now=OVER)
    assert report["in_doubt"] == [] and report["undone"] == ["reserve"]


@guarded
def test_a_holder_refused_at_its_outcome_hands_its_lease_back(conn):
    """Bug: a holder whose outcome is refused keeps its lease, and every
    recovery or compensation waits it out for nothing."""
    version = attempted(conn)
    step = first_step(conn)
    moved = []
    remote = counting_remote([])._replace(call=lambda args, key, token: (
        moved.append(workflow.cancel(conn, WF2, expected_version=version,
                                     who="person")) or (RUNNING, {"happened": True})))
    with pytest.raises(TransitionRefused):  # the cancel came during its call
        workflow_steps.call_step(conn, WF2, step, remote, version=version,
                                 who="holder", now=LIVE)
    [attempt] = first_step(conn)["attempts"]
    assert attempt["admitted_at"] == LIVE and attempt["expires"] == LIVE
    remotes = {name: counting_remote([])._replace(
        probe=lambda args, key: (True, {})) for name in CHOICES2}
    report = workflow_steps.compensate(conn, WF2, remotes, who="person", now=LIVE)
    assert report["undone"] == ["reserve"] and report["in_doubt"] == []


@guarded
def test_the_admission_reads_the_version_inside_its_own_write_lock(tmp_path):
    """Bug: ``admit`` reads the workflow before it takes the write lock: a
    cancel that commits while the admission waits for that lock is not seen,
    and the call is let out after the cancel. A second connection holds the
    lock with its cancel until the admission has asked for it."""
    path = tmp_path / "workflow.sqlite"
    with opened(path) as conn:
        workflow_steps.install(conn)
        workflow.create(conn, WF2, CHOICES2, who="planner")
        version = attempted(conn)
    asking, outcome = threading.Event(), []

    def admission():  # the holder, on its own connection
        with opened(path) as holder:
            holder.set_trace_callback(
                lambda sql: asking.set() if sql.startswith("BEGIN") else None)
            try:
                outcome.append(workflow_steps.admit(holder, WF2, "reserve",
                                                    version=version, wait_s=1,
                                                    now=LIVE))
            except workflow_steps.AdmissionRefused as refused:
                outcome.append(refused.reason)

    with opened(path) as person:
        person.execute("BEGIN IMMEDIATE")  # the person's cancel, not committed yet
        workflow.move(person, WF2, RUNNING, version, CANCELLED, "person", "cancel")
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
    workflow.create(conn, workflow_id, CHOICES2, who="planner")
    started = workflow.transition(conn, workflow_id, expected_state=PENDING,
                                  expected_version=0, to_state=RUNNING, who="w")
    return workflow_steps.attempt_step(conn, workflow_id, step,
                                       expected_version=started, who="other",
                                       now=T0)


def attempts(conn, workflow_id: str) -> list[dict]:
    return [row for row in workflow_steps.snapshot(conn)["workflow_steps"]
            if row["workflow_id"] == workflow_id and row["phase"] == "attempt"]


@guarded
def test_an_attempt_is_held_for_five_seconds_unless_told(conn):
    """Bug: the default lease is another length than the 5 s chapter 08
    states (every wait-out of a dead holder is timed by it)."""
    version = attempted(conn)
    assert workflow_steps.attempt_at(conn, WF2, version)["expires"] == T0 + 5.0


@guarded
def test_a_wait_exactly_as_long_as_the_lease_left_is_not_let_out(conn):
    """Bug: ``admit`` lets out a call whose declared wait ENDS exactly when
    the lease does (``<=`` for ``<``): the call may land as the lease ends,
    when a recovery may call too. The store's clock is injected at the edge."""
    version = attempted(conn)
    at = T0 + 1.0
    left = T0 + workflow_steps.LEASE_S - at
    with pytest.raises(workflow_steps.AdmissionRefused) as refused:
        workflow_steps.admit(conn, WF2, "reserve", version=version, wait_s=left,
                             now=at)
    assert refused.value.reason == workflow_steps.LEASE_TOO_SHORT
    assert workflow_steps.attempt_at(conn, WF2, version)["admitted_at"] is None
    assert workflow_steps.admit(conn, WF2, "reserve", version=version,
                                wait_s=left - 0.001, now=at) == at


@guarded
def test_an_admission_stamps_its_own_attempt_and_no_other(conn):
    """Bug: the admission's stamp lands on every workflow's attempt at that
    version (its ``workflow_id`` dropped): another workflow's call then reads
    as let out, and compensation waits for a call that never left."""
    version = attempted(conn)
    assert attempted_in(conn, OTHER) == version  # the same version number
    workflow_steps.admit(conn, WF2, "reserve", version=version, wait_s=1, now=T0)
    assert [a["admitted_at"] for a in attempts(conn, WF2)] == [T0]
    assert [a["admitted_at"] for a in attempts(conn, OTHER)] == [None]


@guarded
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
        workflow_steps.admit(conn, WF2, step, version=version, wait_s=1, now=T0)
    assert workflow_steps.snapshot(conn) == before


@guarded
def test_a_lease_handed_back_is_that_attempts_alone(conn):
    """Bug: ``release_lease`` ends more than the attempt it names (its
    ``workflow_id`` or ``version`` dropped): another workflow's holder, or
    this workflow's other step in doubt, loses its lease while it may still
    call, and a recovery calls beside it."""
    reserve = attempted(conn)
    charge = workflow_steps.attempt_step(conn, WF2, "charge",
                                         expected_version=reserve, who="holder",
                                         now=T0)
    assert attempted_in(conn, OTHER) == reserve  # the same version number
    assert workflow_steps.release_lease(conn, WF2, reserve, now=LIVE) is True
    assert {a["version"]: a["expires"] for a in attempts(conn, WF2)} == {
        reserve: LIVE, charge: T0 + 5.0}
    assert [a["expires"] for a in attempts(conn, OTHER)] == [T0 + 5.0]


@guarded
@pytest.mark.parametrize("late", [0.0, 1.0], ids=["at its end", "after it"])
def test_a_lease_already_over_is_left_as_it_ended(conn, late):
    """Bug: ``release_lease`` rewrites a lease that had already ended (at
    its exact end, or after), moving its end later, and says it ended one."""
    version = attempted(conn)
    end = T0 + workflow_steps.LEASE_S
    assert workflow_steps.release_lease(conn, WF2, version, now=end + late) is False
    assert workflow_steps.attempt_at(conn, WF2, version)["expires"] == end


class HistoryLost(Exception):
    """Stands in for the history row's INSERT failing (a full disk)."""


def failing_history(*args, **kwargs):
    raise HistoryLost("the history row could not be written")


def test_a_create_whose_history_fails_leaves_no_workflow(tmp_path, monkeypatch):
    """Bug: ``create`` out of its ``immediate`` block: the workflow row
    commits on its own and the history row that says who created it never
    does; the id is then taken and unexplained."""
    with opened(tmp_path / "workflow.sqlite") as conn:
        workflow.install(conn)
        monkeypatch.setattr(workflow, "write_history", failing_history)
        with pytest.raises(HistoryLost):
            workflow.create(conn, WF2, CHOICES2, who="planner")
        with pytest.raises(KeyError):
            workflow.read(conn, WF2)
        monkeypatch.undo()
        assert workflow.create(conn, WF2, CHOICES2, who="planner")["version"] == 0


@guarded
def test_a_move_whose_history_fails_does_not_move(conn, monkeypatch):
    """Bug: ``transition`` out of its ``immediate`` block: the version moves
    and commits without the history row that names who moved it."""
    monkeypatch.setattr(workflow, "write_history", failing_history)
    with pytest.raises(HistoryLost):
        start(conn)
    assert workflow.current(workflow.read(conn, WF2)) == {"state": PENDING,
                                                         "version": 0}
    assert [h["version"] for h in workflow.history(conn, WF2)] == [0]


@guarded
def test_a_cancel_whose_history_fails_does_not_cancel(conn, monkeypatch):
    """Bug: ``cancel`` out of its ``immediate`` block."""
    monkeypatch.setattr(workflow, "write_history", failing_history)
    with pytest.raises(HistoryLost):
        workflow.cancel(conn, WF2, expected_version=0, who="person")
    assert workflow.current(workflow.read(conn, WF2)) == {"state": PENDING,
                                                         "version": 0}


@guarded
@pytest.mark.parametrize("note, kept", [(None, "cancelled"),
                                        ("wrong sku", "wrong sku")])
def test_a_cancel_keeps_the_person_s_note_or_says_cancelled(conn, note, kept):
    """Bug: ``note and "cancelled"``: the person's words replaced, or none."""
    workflow.cancel(conn, WF2, expected_version=0, who="person", note=note)
    last = workflow.history(conn, WF2)[-1]
    assert (last["to_state"], last["who"], last["note"]) == (CANCELLED, "person",
                                                             kept)


@guarded
def test_a_cancel_at_an_old_version_of_a_final_workflow_is_stale(conn):
    """Bug: ``cancel`` without its own version check: a person who saw
    version 0 of a workflow that has since FAILED is told the move is illegal,
    not that what they saw is out of date."""
    version = start(conn)
    workflow.transition(conn, WF2, expected_state=RUNNING, expected_version=version,
                        to_state=workflow.FAILED, who="w")
    with pytest.raises(TransitionRefused) as refused:
        workflow.cancel(conn, WF2, expected_version=0, who="person")
    assert refused.value.reason == workflow.STALE_VERSION
    assert refused.value.current == {"state": workflow.FAILED, "version": 2}
    assert str(refused.value) == "stale_version: the workflow is failed at version 2"


@guarded
@pytest.mark.parametrize("who, version", [(" ", 0), ("person", -1),
                                          ("person", True), ("person", 0.0)])
def test_a_cancel_by_nobody_or_at_no_version_is_refused_and_writes_nothing(
        conn, who, version):
    """Bug: ``cancel`` without ``check_move``: a cancel by nobody, or at a
    version that is not a count (``True == 1``, ``0.0 == 0``), is written."""
    with pytest.raises((TypeError, ValueError)):
        workflow.cancel(conn, WF2, expected_version=version, who=who)
    assert [h["version"] for h in workflow.history(conn, WF2)] == [0]


def test_a_workflow_created_by_nobody_is_refused(tmp_path):
    """Bug: ``create`` without ``check_text("who", ...)``."""
    with opened(tmp_path / "workflow.sqlite") as conn:
        workflow.install(conn)
        with pytest.raises(ValueError):
            workflow.create(conn, WF2, CHOICES2, who=" ")
        with pytest.raises(KeyError):
            workflow.read(conn, WF2)
