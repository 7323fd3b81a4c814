"""Grades exercise 07.1: probes by id and by header, and the unverifiable one."""

import pytest

from crashcourse.services import drive, mail
from crashcourse.store import opened

ARGS = {"file_id": "f001", "name": "invoice-2026-001.pdf"}


@pytest.fixture
def conns(tmp_path):
    with opened(tmp_path / "d.sqlite") as d, opened(tmp_path / "m.sqlite") as m:
        drive.initialize(d, {"f001": "scan-001.pdf", "f002": "scan-002.pdf"})
        mail.initialize(m)
        yield d, m


def test_rename_probe_answers_by_id(answer, conns):
    probes, (d, _) = answer("ch07", "probes"), conns
    done, seen = probes.probe_rename(d, ARGS, "k")
    assert (done, seen["name"]) == (False, "scan-001.pdf")
    drive.rename_to(d, "f001", ARGS["name"])
    assert probes.probe_rename(d, ARGS, "k")[0] is True


def test_rename_probe_is_not_fooled_by_a_name_collision(answer, conns):
    probes, (d, _) = answer("ch07", "probes"), conns
    drive.rename_to(d, "f002", ARGS["name"], requester="supplier")
    done, seen = probes.probe_rename(d, ARGS, "k")
    assert done is False and seen["file_id"] == "f001"


def test_mail_probe_finds_a_queued_message_by_its_header(answer, conns):
    probes, (_, m) = answer("ch07", "probes"), conns
    assert probes.probe_mail(m, {}, "t/step-41") == (False, {"message_id": None})
    mail.submit(m, "owner@shop.example", "s", "b", {mail.KEY_HEADER: "t/step-41"})
    done, seen = probes.probe_mail(m, {}, "t/step-41")
    assert (done, seen["status"]) == (True, "queued")
    assert probes.probe_mail(m, {}, "t/step-42")[0] is False


def test_the_unverifiable_action_is_named(answer):
    probes = answer("ch07", "probes")
    assert probes.unverifiable_action() == "phone_supplier"
