"""Grades exercise 12.2: the prediction against four real kills.

DBOS runs the shop's workflow with its tools as plain functions; each kill
is a real SIGKILL of the worker process, each recovery DBOS's own
(``DBOS.launch()`` in a fresh process), and the orders are counted from the
supplier's rows. The kills run once per session (shared with the recorded
wrong answers' grading runs), and only for an answer that predicts something.
"""

from __future__ import annotations

import pytest

pytest.importorskip("dbos")  # the frameworks are the package's extra 'frameworks'

from crashcourse.lab.harness import Harness  # noqa: E402
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import opened, table_rows  # noqa: E402
from crashcourse.waiting import wait_until  # noqa: E402
from crashcourse.workers.frameworks import records  # noqa: E402
from crashcourse.workers.frameworks.shop import build_world  # noqa: E402

CELLS = ("none/after_ack", "none/after_record", "position/after_ack",
         "position/after_record")
HOLD = {"after_ack": "after_ack:place_order",
        "after_record": "before_request:send_confirmation"}
WAIT_S = 60.0


def kill_and_recover(harness, supplier, root, cell: str) -> int:
    key, point = cell.split("/")
    trial = cell.replace("/", "-").replace("_", "-")
    world = build_world(root / trial, supplier.url, trial)
    args = ["-m", "crashcourse.workers.frameworks.dbos_agent", "--world",
            str(world.folder), "--key", key, "--tools", "plain"]
    worker = harness.start(args, stop_at=HOLD[point])
    worker.wait_for_boundary(WAIT_S)
    if point == "after_record":  # the model's next turn is in DBOS's own file
        wait_until(lambda: records.dbos_steps(world).count("call_model") >= 3,
                   WAIT_S, what="DBOS's record of the model's next turn")
    worker.kill()  # -9, or it raises
    resumed = harness.run(args, WAIT_S)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    with opened(supplier.db) as conn:
        return sum(1 for order in table_rows(conn, "orders")
                   if order["work_id"] == trial)


@pytest.fixture(scope="session")
def measured(tmp_path_factory, measured_once) -> dict[str, int]:
    """The four kills, whatever the answer: once per session (exercises'
    conftest), shared with the wrong answers' grading runs."""

    def kill_each_cell() -> dict[str, int]:
        root = tmp_path_factory.mktemp("ch12-predict")
        with Harness() as harness, \
                start_supplier(harness, root / "supplier.sqlite") as supplier:
            return {cell: kill_and_recover(harness, supplier, root, cell)
                    for cell in CELLS}

    return measured_once("ch12-predict", kill_each_cell)


def test_the_prediction_names_every_cell(answer):
    guess = answer("ch12", "predict").predicted()
    assert sorted(guess) == sorted(CELLS)
    assert all(isinstance(n, int) and n >= 0 for n in guess.values())


def test_the_prediction_matches_the_kills(answer, request):
    guess = answer("ch12", "predict").predicted()  # a stub fails before any kill
    orders = request.getfixturevalue("measured")
    wrong = {cell: {"predicted": guess.get(cell), "measured": orders[cell]}
             for cell in CELLS if guess.get(cell) != orders[cell]}
    assert wrong == {}
