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
    assert (done, seen["name"]) == (False, "scan-001.pdf")
    drive.rename_to(drive_path, "f001", ARGS["name"])
    assert probes.probe_rename(drive_path, ARGS, "k")[0] is True


def test_rename_probe_is_not_fooled_by_a_name_collision(answer, services):
    probes, (drive_path, _) = answer("ch07", "probes"), services
    drive.rename_to(drive_path, "f002", ARGS["name"], requester="supplier")
    done, seen = probes.probe_rename(drive_path, ARGS, "k")
    assert done is False and seen["file_id"] == "f001"


def test_mail_probe_finds_a_queued_message_by_its_header(answer, services):
    probes, (_, mail_path) = answer("ch07", "probes"), services
    assert probes.probe_mail(mail_path, MAIL, KEY_42) == (False, {"message_id": None})
    mail.submit(mail_path, MAIL["to"], MAIL["subject"], MAIL["body"],
                {mail.KEY_HEADER: KEY_42})
    done, seen = probes.probe_mail(mail_path, MAIL, KEY_42)
    assert (done, seen["status"]) == (True, mail.QUEUED)
    assert probes.probe_mail(mail_path, MAIL, KEY_43)[0] is False
    mail.tick(mail_path)  # delivered: still the same accepted message
    assert probes.probe_mail(mail_path, MAIL, KEY_42) == (
        True, {"message_id": seen["message_id"], "status": mail.SENT})


def test_the_unverifiable_action_is_named(answer):
    probes = answer("ch07", "probes")
    assert probes.unverifiable_action() == "phone_supplier"
