"""The workflow's store (chapter 08): one compare-and-set per move, a history
row per move, steps around remote calls, compensations, the final report."""

from __future__ import annotations

import pytest

from crashcourse import workflow
from crashcourse.effects import operation_key
from crashcourse.figures import workflow as workflow_figures
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


# ``conn`` (tests/conftest.py): a fresh store with the workflow created. The
# workflow's SQL is SQLite's alone: chapter 10 moves claims, fences, orders and
# the journal to a server, not the workflow.
pytestmark = [pytest.mark.installs.with_args(created),
              pytest.mark.sqlite_only("the workflow runs on SQLite alone")]


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
    cancelled_with_three_kinds_of_step(conn)  # reserve done, charge in doubt
    remotes = {step: fake_remote(found, []) for step in CHOICES}
    report = workflow_steps.compensate(conn, WF, remotes, who="person", now=LATER)
    fate = {c["step"]: c["status"] for c in report["compensations"]}
    assert fate == {"reserve": workflow_steps.UNDONE,
                    "charge": workflow_steps.UNDONE if found
                    else workflow_steps.NOTHING_TO_UNDO}
    assert report["state"] == CANCELLED and report["final"]
    assert report["completed"] == (["reserve", "charge"] if found else ["reserve"])
    assert report["not_done"] == (["mail"] if found else ["charge", "mail"])
    assert report["undone"] == report["completed"] and report["in_doubt"] == []
    before = rows(conn)
    workflow_steps.compensate(conn, WF, remotes, who="person", now=LATER)
    assert rows(conn) == before  # again: no change


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
