"""Grades exercise 07.4: a suffix stated as an end state survives a re-run."""

import pytest

from crashcourse import journal
from crashcourse.plan import Step
from crashcourse.services import drive
from crashcourse.store import opened


@pytest.fixture
def d(tmp_path):
    with opened(tmp_path / "d.sqlite") as conn:
        drive.initialize(conn, {"f001": "scan-001.pdf"})
        yield conn


def test_the_step_states_the_whole_new_name(answer, d):
    step = answer("ch07", "end_state").suffix_step(d, 3, "f001", "-signed")
    assert isinstance(step, Step) and step.number == 3 and step.action == "rename"
    assert step.args == {"file_id": "f001", "name": "scan-001-signed.pdf"}
    assert drive.names(d)["f001"] == "scan-001.pdf"  # planning renames nothing


def test_applying_the_step_twice_leaves_one_suffix(answer, d, tmp_path):
    step = answer("ch07", "end_state").suffix_step(d, 1, "f001", "-signed")
    rename = journal.Action(
        lambda args, key: drive.rename_to(d, args["file_id"], args["name"]),
        lambda args, key: drive.probe_rename(d, args["file_id"], args["name"]))
    with opened(tmp_path / "j.sqlite") as j:
        journal.install(j)
        journal.run_step(j, "t", step, rename)
        rename.execute(step.args, "again")  # a resumed run doing it blind
    assert drive.names(d)["f001"] == "scan-001-signed.pdf"
