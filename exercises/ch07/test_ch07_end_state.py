"""Grades exercise 07.4: a suffix stated as an end state survives a re-run."""

import pytest

from crashcourse import journal
from crashcourse.plan import Step
from crashcourse.services import drive
from crashcourse.store import opened


@pytest.fixture
def drive_path(tmp_path):
    path = tmp_path / "drive.sqlite"
    drive.install(path, {"f001": "scan-001.pdf"})
    return path


def test_the_step_states_the_whole_new_name(answer, drive_path):
    step = answer("ch07", "end_state").suffix_step(drive_path, 3, "f001", "-signed")
    assert isinstance(step, Step) and step.number == 3 and step.action == "rename"
    assert step.args == {"file_id": "f001", "name": "scan-001-signed.pdf"}
    assert drive.names(drive_path)["f001"] == "scan-001.pdf"  # planning renames nothing


def test_applying_the_step_twice_leaves_one_suffix(answer, drive_path, tmp_path):
    step = answer("ch07", "end_state").suffix_step(drive_path, 1, "f001", "-signed")
    rename = journal.Action(
        lambda args, operation_key: drive.rename_to(
            drive_path, args["file_id"], args["name"]),
        lambda args, operation_key: drive.probe_rename(
            drive_path, args["file_id"], args["name"]))
    with opened(tmp_path / "journal.sqlite") as conn:
        journal.install(conn)
        journal.run_step(conn, "t", step, rename)
        rename.execute(step.args, "again")  # a resumed run doing it blind
    assert drive.names(drive_path)["f001"] == "scan-001-signed.pdf"
