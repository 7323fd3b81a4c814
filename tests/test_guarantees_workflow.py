"""The workflow's version-checked moves and its steps (chapter 08): each test
defends one guarantee against the one-line bug named in its docstring."""

from __future__ import annotations

import pytest

from crashcourse import workflow, workflow_steps
from crashcourse.store import opened
from crashcourse.workflow import CANCELLED, PENDING, RUNNING, TransitionRefused
from crashcourse.workflow_steps import Remote

WF = "wf-guarantee"
CHOICES = {"reserve": {"sku": "flour-25kg"}, "charge": {"amount_cents": 12900}}


@pytest.fixture
def conn(tmp_path):
    with opened(tmp_path / "workflow.sqlite") as conn:
        workflow_steps.install(conn)
        workflow.create(conn, WF, CHOICES, who="planner")
        yield conn


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
