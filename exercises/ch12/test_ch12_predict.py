"""Grades exercise 12.2: the prediction against four real kills.

DBOS runs the shop's workflow with its tools as steps or as plain functions,
under the position key and under the action key (behind the adapter); each
kill is a real SIGKILL of the worker process right after the mail provider
accepted the confirmation, each recovery DBOS's own (``DBOS.launch()`` in a
fresh process), and what is counted comes from the services' rows: the
order requests the supplier received (its ``requests`` log), the orders it
holds, and the provider's messages. The kills run once per session (shared
with the recorded wrong answers' grading runs), and only for an answer that
predicts something.
"""

from __future__ import annotations

import importlib.util

import pytest

from crashcourse.lab.harness import Harness
from crashcourse.services import mail
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import opened, table_rows
from crashcourse.workers.frameworks.shop import build_world


@pytest.fixture(autouse=True)
def dbos_installed():
    """DBOS runs the kills: without it every test FAILS, saying how to get it
    (a skip would grade an unsolved stub "skipped", exit 0)."""
    if importlib.util.find_spec("dbos") is None:
        pytest.fail("exercise 12.2 runs DBOS, which is not installed: pip install"
                    " -e '.[frameworks]' (make venv installs it)", pytrace=False)

# cells the chapter never printed: it killed no framework at the mail, and
# counted the orders, never the requests that asked for them
CELLS = ("step/position", "plain/position", "step/action", "plain/action")
COUNTS = ("requests", "orders", "messages")
KILL_AT = "after_ack:send_confirmation"  # accepted; the tool has not returned
WAIT_S = 60.0


def kill_and_recover(harness, supplier, root, cell: str) -> dict[str, int]:
    tools, key = cell.split("/")
    trial = cell.replace("/", "-")
    world = build_world(root / trial, supplier.url, trial)
    args = ["-m", "crashcourse.workers.frameworks.dbos_agent", "--world",
            str(world.folder), "--key", key, "--tools", tools]
    worker = harness.start(args, stop_at=KILL_AT)
    worker.wait_for_boundary(WAIT_S)
    worker.kill()  # -9, or it raises
    resumed = harness.run(args, WAIT_S)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    with opened(supplier.db) as conn:
        orders = sum(1 for order in table_rows(conn, "orders")
                     if order["work_id"] == trial)
        requests = sum(1 for request in table_rows(conn, "requests")
                       if request["work_id"] == trial and request["method"] == "POST")
    return {"requests": requests, "orders": orders,
            "messages": len(mail.messages(world.mail))}


@pytest.fixture(scope="session")
def measured(tmp_path_factory, measured_once) -> dict[str, dict[str, int]]:
    """The four kills, whatever the answer: once per session (exercises'
    conftest), shared with the wrong answers' grading runs."""

    def kill_each_cell() -> dict[str, dict[str, int]]:
        root = tmp_path_factory.mktemp("ch12-predict")
        with Harness() as harness, \
                start_supplier(harness, root / "supplier.sqlite") as supplier:
            return {cell: kill_and_recover(harness, supplier, root, cell)
                    for cell in CELLS}

    return measured_once("ch12-predict-adapter", kill_each_cell)


@pytest.fixture
def predicted(sealed):
    """The answer, sealed (exercises' conftest): a prediction is made, not
    read from the kills' stored counts, and recorded as it returns, before
    this test asks for the kills."""
    return sealed("ch12", "predict", "solutions", "experiment").predicted


def test_the_prediction_names_every_cell(predicted):
    guess = predicted()
    assert sorted(guess) == sorted(CELLS), (
        f"the prediction names the cells {sorted(guess)}, not {sorted(CELLS)}:"
        " give one entry per framework and kill point")
    for cell, counts in guess.items():
        assert sorted(counts) == sorted(COUNTS), (
            f"cell {cell} predicts the counts {sorted(counts)}, not"
            f" {sorted(COUNTS)}")
        assert all(type(n) is int and n >= 0 for n in counts.values()), (
            f"cell {cell} predicts {counts}: each count is a whole number >= 0")


def test_the_prediction_matches_the_kills(predicted, request):
    guess = predicted()  # recorded first; a stub fails before any kill
    counted = request.getfixturevalue("measured")
    wrong = {cell: {"predicted": guess.get(cell), "measured": counted[cell]}
             for cell in CELLS if guess.get(cell) != counted[cell]}
    assert wrong == {}, (
        f"{len(wrong)} of {len(CELLS)} cells predicted otherwise than the kills"
        f" counted: {wrong}")
