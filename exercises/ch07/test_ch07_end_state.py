"""Grades exercise 07.4: a suffix stated as an end state survives a re-run."""

import pytest

from crashcourse import journal
from crashcourse.journal.plan import Step
from crashcourse.services import drive
from crashcourse.store import opened

FILES = {"f001": "scan-001.pdf", "f002": "invoice.2026.05.pdf", "f003": "README",
         "f004": "scan-004-signed.pdf"}


@pytest.fixture
def drive_path(tmp_path):
    path = tmp_path / "drive.sqlite"
    drive.install(path, FILES)
    return path


def test_the_step_states_the_whole_new_name(answer, drive_path):
    step = answer("ch07", "end_state").suffix_step(drive_path, 3, "f001", "-signed")
    assert isinstance(step, Step) and step.number == 3 and step.action == "rename", (
        f"suffix_step returned {step!r}, not a Step numbered 3 whose action is"
        " 'rename'")
    assert step.args == {"file_id": "f001", "name": "scan-001-signed.pdf"}, (
        f"the step's arguments are {step.args}: it must state the whole new"
        " name ('scan-001-signed.pdf'), an end state, not 'add -signed'")
    assert not step.irreversible, "a rename was marked irreversible: it can be undone"
    assert drive.names(drive_path) == FILES, (  # planning renames nothing
        "planning the step renamed a file on the drive: a plan only reads")


@pytest.mark.parametrize(("file_id", "renamed"), [
    ("f002", "invoice.2026.05-signed.pdf"),  # the suffix goes before the LAST dot
    ("f003", "README-signed"),  # no extension: at the end
    ("f004", "scan-004-signed-signed.pdf"),  # the plan says add one: it is added
], ids=["dots-in-the-name", "no-extension", "already-suffixed"])
def test_the_name_is_read_from_the_drive(answer, drive_path, file_id, renamed):
    step = answer("ch07", "end_state").suffix_step(drive_path, 1, file_id, "-signed")
    assert step.args == {"file_id": file_id, "name": renamed}, (
        f"for {FILES[file_id]!r} the step names {step.args.get('name')!r}, not"
        f" {renamed!r}: the suffix goes before the last dot (at the end without"
        " one), on the name read from the drive")
    assert drive.names(drive_path) == FILES, (
        "planning the step renamed a file on the drive: a plan only reads")


def test_applying_the_step_twice_leaves_one_suffix(answer, drive_path, tmp_path):
    step = answer("ch07", "end_state").suffix_step(drive_path, 1, "f001", "-signed")
    rename = journal.Action(
        lambda args, operation_key: drive.rename_to(
            drive_path, args["file_id"], args["name"]),
        lambda args, operation_key: drive.probe_rename(
            drive_path, args["file_id"], args["name"]))
    with opened(tmp_path / "journal.sqlite") as conn:
        journal.install(conn)
        claim = journal.claim_task(conn, "t", "reader", ttl=60)
        journal.run_step(conn, "t", step, rename, claim)
        rename.execute(step.args, "again")  # a resumed run doing it blind
    name = drive.names(drive_path)["f001"]
    assert name == "scan-001-signed.pdf", (
        f"the step applied twice left {name!r}: a step stating the end state"
        " leaves one suffix however often it runs")
