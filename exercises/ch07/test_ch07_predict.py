"""Grades exercise 07.3: the prediction, then a real kill at the same point."""

import pytest

from crashcourse import journal
from crashcourse.journal.plan import Step, make_plan
from crashcourse.lab.example import restock_plan
from crashcourse.lab.harness import Harness
from crashcourse.store import opened
from crashcourse.workers.journal_worker import build_world, paths

PLAN = restock_plan()
N = len(PLAN.steps)
LAST_TWO = tuple(s.number for s in PLAN.steps if s.irreversible)  # the summaries
# A plan as a planner might leave it, unordered: a mail in the middle.
TIDY = make_plan("tidy", [
    Step(1, "rename", {"file_id": "f001", "name": "invoice-2026-001.pdf"}),
    Step(2, "send_mail", {"to": "owner@shop.example", "subject": "filed",
                          "body": "f001 filed"}, irreversible=True),
    Step(3, "rename", {"file_id": "f002", "name": "invoice-2026-002.pdf"}),
    Step(4, "rename", {"file_id": "f003", "name": "invoice-2026-003.pdf"}),
    Step(5, "send_mail", {"to": "orders@supplier.example", "subject": "filed",
                          "body": "3 invoices filed"}, irreversible=True),
])


@pytest.fixture
def predict(sealed):
    """The answer, sealed (exercises' conftest): a prediction is made from the
    plan alone, recorded as it returns, before any worker runs."""
    return sealed("ch07", "predict", "solutions", "experiment").predict


def on_paper(predict, k, boundary, plan, expected, why):
    """One prediction against the count worked out by hand; ``why`` says
    which rule of the one-commit journal a wrong count breaks."""
    said = predict(k, boundary, plan)
    assert said == expected, (
        f"a kill at step {k}, {boundary} was predicted wrong: {why};"
        f" predicted {said}, expected {expected}")


def test_predictions_on_paper(predict):
    on_paper(predict, 32, "after_intent", PLAN, {
        "confirmed": 31, "in_doubt": 1, "not_started": N - 32,
        "irreversible_not_started": LAST_TWO},
        "step 32's intent is committed and its action may or may not have run,"
        " so it is in doubt and the 31 before it are confirmed")
    on_paper(predict, 1, "before_intent", PLAN, {
        "confirmed": 0, "in_doubt": 0, "not_started": N,
        "irreversible_not_started": LAST_TWO},
        "before the first intent nothing is written: every step is not started")
    on_paper(predict, LAST_TWO[0], "after_outcome", PLAN, {
        "confirmed": LAST_TWO[0] - 1, "in_doubt": 1, "not_started": N - LAST_TWO[0],
        "irreversible_not_started": LAST_TWO[1:]},
        "the outcome is written with the next step's intent, so a step killed"
        " after its outcome is still in doubt")
    on_paper(predict, N, "after_action", PLAN, {
        "confirmed": N - 1, "in_doubt": 1, "not_started": 0,
        "irreversible_not_started": ()},
        "an action that ran is not confirmed until its outcome is committed:"
        " the last step is in doubt")
    on_paper(predict, N, "after_outcome", PLAN, {
        "confirmed": N - 1, "in_doubt": 1, "not_started": 0,
        "irreversible_not_started": ()},
        "the last step's outcome waits for a commit that never comes: in doubt")


def test_the_plan_decides_which_steps_are_irreversible(predict):
    on_paper(predict, 2, "before_intent", TIDY, {
        "confirmed": 0, "in_doubt": 1, "not_started": 4,
        "irreversible_not_started": (2, 5)},
        "step 1's row is there without its outcome (in doubt), and the"
        " irreversible steps are the ones the plan flags (the mails 2 and 5),"
        " not the plan's last ones")
    on_paper(predict, 2, "after_outcome", TIDY, {
        "confirmed": 1, "in_doubt": 1, "not_started": 3,
        "irreversible_not_started": (5,)},
        "step 2's outcome is held for step 3's commit, so step 2 is in doubt,"
        " and the plan flags step 5 (a mail in the middle) as irreversible")


@pytest.mark.parametrize("boundary", journal.PHASES)
def test_every_step_is_counted_once(predict, boundary):
    for k in range(1, len(TIDY.steps) + 1):
        said = predict(k, boundary, TIDY)
        counts = (said["confirmed"], said["in_doubt"], said["not_started"])
        assert min(counts) >= 0 and sum(counts) == len(TIDY.steps), (
            f"at step {k}, {boundary} the counts do not cover the plan once: each"
            f" of its {len(TIDY.steps)} steps is confirmed, in doubt or not"
            f" started, none negative; predicted {said}")


def killed_at(tmp_path, plan, k, boundary):
    """What journal_status says after a real SIGKILL at step k, boundary."""
    task = build_world(str(tmp_path), plan)
    with Harness() as harness:
        worker = harness.start(
            ["-m", "crashcourse.workers.journal_worker", "--dir", str(tmp_path),
             "--task", task], stop_at=f"step-{k}:{boundary}")
        worker.wait_for_boundary(timeout=30)
        code = worker.kill().returncode
        assert code == -9, (
            "the grader's world, not your answer: the worker was to be killed"
            f" by SIGKILL at step {k}, {boundary}, and exited {code}")
    with opened(paths(str(tmp_path))["journal"]) as conn:
        seen = journal.journal_status(conn, task, plan)
    return {**seen.summary(), "irreversible_not_started": seen.irreversible_not_started}


# a rename in doubt, the moment before the first mail, a confirmed rename
@pytest.mark.parametrize("k, boundary", [(12, "after_action"),
                                         (LAST_TWO[0], "before_intent"),
                                         (7, "after_outcome")])
def test_prediction_matches_a_real_kill(predict, tmp_path, k, boundary):
    expected = predict(k, boundary, PLAN)  # recorded before the kill
    seen = killed_at(tmp_path, PLAN, k, boundary)
    assert expected == seen, (
        f"a real kill at step {k}, {boundary} left a journal other than predicted:"
        " count a step confirmed only once its outcome is committed (with the"
        f" next step's intent); predicted {expected}, the journal shows {seen}")


@pytest.mark.parametrize("k, boundary", [(2, "after_outcome"), (2, "after_intent")])
def test_prediction_matches_a_real_kill_on_an_unordered_plan(predict, tmp_path, k,
                                                             boundary):
    expected = predict(k, boundary, TIDY)  # recorded before the kill
    seen = killed_at(tmp_path, TIDY, k, boundary)
    assert expected == seen, (
        f"a real kill at step {k}, {boundary} of a plan that mails in the middle"
        " left a journal other than predicted: read the irreversible flags of"
        f" the plan you are given; predicted {expected}, the journal shows {seen}")
