"""Grades exercise 07.3: the prediction, then a real kill at the same point."""

import pytest

from crashcourse import journal
from crashcourse.example import restock_plan
from crashcourse.harness import Harness
from crashcourse.store import opened
from crashcourse.workers.journal_worker import build_world, paths

PLAN = restock_plan()


def test_predictions_on_paper(answer):
    predict = answer("ch07", "predict").predict
    assert predict(32, "after_intent", PLAN) == {
        "confirmed": 31, "in_doubt": 1, "not_started": 10,
        "irreversible_not_started": (41, 42)}
    assert predict(1, "before_intent", PLAN)["not_started"] == 42
    assert predict(41, "after_outcome", PLAN)["irreversible_not_started"] == (42,)
    assert predict(42, "after_action", PLAN)["in_doubt"] == 1


@pytest.mark.parametrize("k, boundary", [(12, "after_action"), (41, "before_intent")])
def test_prediction_matches_a_real_kill(answer, tmp_path, k, boundary):
    expected = answer("ch07", "predict").predict(k, boundary, PLAN)
    task = build_world(str(tmp_path), PLAN)
    with Harness() as harness:
        worker = harness.start(
            ["-m", "crashcourse.workers.journal_worker", "--dir", str(tmp_path),
             "--task", task], stop_at=f"step-{k}:{boundary}")
        worker.wait_for_boundary(timeout=30)
        assert worker.kill().returncode == -9
    with opened(paths(str(tmp_path))["journal"]) as conn:
        seen = journal.journal_status(conn, task, PLAN)
    assert expected == {**seen.summary(),
                        "irreversible_not_started": seen.irreversible_not_started}
