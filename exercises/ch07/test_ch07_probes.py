"""Grades exercise 07.1: probes by id and by header, and the unverifiable one."""

import pytest

from crashcourse.effects import operation_key
from crashcourse.services import drive, mail

ARGS = {"file_id": "f001", "name": "invoice-2026-001.pdf"}
MAIL = {"to": "owner@shop.example", "subject": "s", "body": "b"}
KEY_42 = operation_key("restock", 42, "send_mail", MAIL)
KEY_43 = operation_key("restock", 43, "send_mail", MAIL)


@pytest.fixture(autouse=True)
def runtime_probes_are_off_limits(monkeypatch):
    """The exercise is to write the probes: the runtime's own are unplugged
    while these tests run, so an answer that calls them fails here."""

    def off_limits(*args, **kwargs):
        raise AssertionError("write the probe yourself: the runtime's is unplugged")

    for module, name in ((drive, "probe_rename"), (drive, "probe_rename_by_name"),
                         (mail, "probe_sent")):
        monkeypatch.setattr(module, name, off_limits)


@pytest.fixture
def services(tmp_path):
    """The drive's and the mail provider's files: their addresses."""
    drive_path, mail_path = tmp_path / "drive.sqlite", tmp_path / "mail.sqlite"
    drive.install(drive_path, {"f001": "scan-001.pdf", "f002": "scan-002.pdf"})
    mail.install(mail_path)
    return drive_path, mail_path


def test_rename_probe_answers_by_id(answer, services):
    probes, (drive_path, _) = answer("ch07", "probes"), services
    done, seen = probes.probe_rename(drive_path, ARGS, "k")
    assert (done, seen["name"]) == (False, "scan-001.pdf"), (
        f"before any rename the probe answered done={done!r}, seen {seen}: not"
        " done, and the file's name as the drive has it ('scan-001.pdf')")
    drive.rename_to(drive_path, "f001", ARGS["name"])
    done = probes.probe_rename(drive_path, ARGS, "k")[0]
    assert done is True, (
        f"after the rename the probe answered done={done!r}: the file f001 now"
        " has the new name")


def test_rename_probe_is_not_fooled_by_a_name_collision(answer, services):
    probes, (drive_path, _) = answer("ch07", "probes"), services
    drive.rename_to(drive_path, "f002", ARGS["name"], requester="supplier")
    done, seen = probes.probe_rename(drive_path, ARGS, "k")
    assert done is False and seen["file_id"] == "f001", (
        f"another file took the new name and the probe answered done={done!r},"
        f" seen {seen}: ask the drive by file id (f001), not by name")


def test_mail_probe_finds_a_queued_message_by_its_header(answer, services):
    probes, (_, mail_path) = answer("ch07", "probes"), services
    said = probes.probe_mail(mail_path, MAIL, KEY_42)
    assert said == (False, {"message_id": None}), (
        f"with no mail at the provider the probe answered {said}: not done,"
        " message_id None")
    mail.submit(mail_path, MAIL["to"], MAIL["subject"], MAIL["body"],
                {mail.KEY_HEADER: KEY_42})
    done, seen = probes.probe_mail(mail_path, MAIL, KEY_42)
    assert (done, seen["status"]) == (True, mail.QUEUED), (
        f"a queued message with the step's key header was answered done={done!r},"
        f" seen {seen}: accepted (queued) is done")
    other = probes.probe_mail(mail_path, MAIL, KEY_43)[0]
    assert other is False, (
        f"another step's key was answered done={other!r}: find the message by"
        " its key header, not by its subject or recipient")
    mail.tick(mail_path)  # delivered: still the same accepted message
    said = probes.probe_mail(mail_path, MAIL, KEY_42)
    assert said == (True, {"message_id": seen["message_id"], "status": mail.SENT}), (
        f"once delivered the probe answered {said}: still done, the same"
        " message, now sent")


def test_the_unverifiable_action_is_named(answer):
    probes = answer("ch07", "probes")
    named = probes.unverifiable_action()
    assert named == "phone_supplier", (
        f"{named!r} was named: the one action no service can be asked about"
        " afterwards is the phone call")
