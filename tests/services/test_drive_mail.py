"""The drive and the mail provider of chapter 07, and what their probes see.

Both are services: called by the path of their file, never by a connection.
"""

import sqlite3
import time

import pytest

from crashcourse.services import drive, mail
from crashcourse.store import immediate, opened


@pytest.fixture
def drive_path(tmp_path):
    path = tmp_path / "drive.sqlite"
    drive.install(path, {"f001": "scan-001.pdf", "f002": "scan-002.pdf"})
    return path


@pytest.fixture
def mail_path(tmp_path):
    path = tmp_path / "mail.sqlite"
    mail.install(path)
    return path


def requests(path):
    with opened(path) as conn:
        return conn.execute(
            "SELECT file_id, name, changed FROM rename_requests ORDER BY seq"
        ).fetchall()


def test_a_rename_is_an_end_state_applying_it_twice_changes_nothing(drive_path):
    drive.rename_to(drive_path, "f001", "invoice-001.pdf")
    again = drive.rename_to(drive_path, "f001", "invoice-001.pdf")
    assert again["was"] == "invoice-001.pdf"
    assert drive.names(drive_path)["f001"] == "invoice-001.pdf"
    assert [tuple(r) for r in requests(drive_path)] == [
        ("f001", "invoice-001.pdf", 1), ("f001", "invoice-001.pdf", 0)]
    assert drive.duplicate_requests(drive_path) == 1  # counted from the log


def test_bad_rename_input_is_refused_and_nothing_is_written(drive_path):
    with pytest.raises(drive.UnknownFile):
        drive.rename_to(drive_path, "f999", "x.pdf")
    with pytest.raises(ValueError):
        drive.rename_to(drive_path, "f001", "a/b.pdf")
    assert requests(drive_path) == []
    assert drive.names(drive_path)["f001"] == "scan-001.pdf"


def test_probe_by_id_is_not_fooled_by_another_file_with_the_name(drive_path):
    drive.install(drive_path, {"supplier-1": "invoice-001.pdf"}, owner="supplier")
    done, seen = drive.probe_rename(drive_path, "f001", "invoice-001.pdf")
    assert (done, seen["name"]) == (False, "scan-001.pdf")
    wrong, seen = drive.probe_rename_by_name(drive_path, "f001", "invoice-001.pdf")
    assert (wrong, seen["file_id"]) == (True, "supplier-1")  # the lie
    assert "supplier-1" not in drive.names(drive_path)  # shop files only
    assert drive.lookup(drive_path, "supplier-1") == {
        "file_id": "supplier-1", "name": "invoice-001.pdf"}


def test_both_probes_agree_when_the_rename_did_happen(drive_path):
    drive.rename_to(drive_path, "f002", "invoice-002.pdf")
    assert drive.probe_rename(drive_path, "f002", "invoice-002.pdf")[0]
    assert drive.probe_rename_by_name(drive_path, "f002", "invoice-002.pdf")[0]


def test_sending_is_a_delta_two_submissions_are_two_messages(mail_path):
    headers = {mail.KEY_HEADER: "restock/step-41"}
    for _ in range(2):
        mail.submit(mail_path, "orders@supplier.example", "s", "b", headers)
    assert len(mail.messages(mail_path)) == 2
    assert mail.duplicate_messages(mail_path) == 1


def test_queued_is_not_sent_and_the_probe_searches_the_queue(mail_path):
    mail.submit(mail_path, "owner@shop.example", "s", "b",
                {mail.KEY_HEADER: "restock/step-42"})
    assert mail.sent_folder(mail_path) == []
    done, seen = mail.probe_sent(mail_path, "restock/step-42")
    assert (done, seen["status"]) == (True, "queued")
    assert mail.tick(mail_path) == 1
    assert [m["operation_key"] for m in mail.sent_folder(mail_path)] == [
        "restock/step-42"]
    assert mail.probe_sent(mail_path, "restock/step-41")[0] is False


def test_a_bad_address_is_refused_and_nothing_is_queued(mail_path):
    with pytest.raises(ValueError):
        mail.submit(mail_path, "nobody", "s", "b", {})
    assert mail.messages(mail_path) == []


def test_no_call_leaves_the_write_lock_held(drive_path, mail_path):
    drive.rename_to(drive_path, "f001", "invoice-001.pdf")
    mail.submit(mail_path, "owner@shop.example", "s", "b", {})
    for path in (drive_path, mail_path):  # no call left a transaction open
        with opened(path, busy_timeout_ms=50) as conn, immediate(conn):
            pass


def test_copies_counts_every_message_under_one_key(tmp_path):
    path = tmp_path / "mail.sqlite"
    mail.install(path)
    assert mail.copies(path, "k-1") == 0
    for _ in range(3):
        mail.submit(path, "orders@supplier.example", "s", "b", {mail.KEY_HEADER: "k-1"})
    mail.submit(path, "orders@supplier.example", "s", "b", {mail.KEY_HEADER: "k-2"})
    assert (mail.copies(path, "k-1"), mail.copies(path, "k-2")) == (3, 1)
    assert mail.duplicate_messages(path) == 2


def test_a_submit_waits_for_the_providers_lock_no_longer_than_it_was_told(tmp_path):
    path = tmp_path / "mail.sqlite"
    mail.install(path)
    with opened(path) as holder:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        try:
            started = time.monotonic()
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                mail.submit(path, "a@b.example", "s", "b", {}, busy_timeout_ms=200)
            assert time.monotonic() - started < 4.0  # the default would wait 5 s
        finally:
            holder.execute("ROLLBACK")
    assert mail.messages(path) == []


# --- guarantees (was tests/test_guarantees_journal.py): each test defends one
# guarantee against the one-line bug named in its docstring


def test_the_mail_provider_delivers_each_message_once(tmp_path):
    # the mail provider is a service: a SQLite file, called by its path
    """Bug: ``tick`` sends every message again, not only the queued ones."""
    path = tmp_path / "mail.sqlite"
    mail.install(path)
    mail.submit(path, "owner@shop.example", "paid", "body", {})
    assert mail.tick(path) == 1
    first = mail.messages(path)
    assert mail.tick(path) == 0
    assert mail.messages(path) == first  # sent_at unchanged: not sent again


# --- issue 23: each fails on its one-line mutant ---------------------------------


@pytest.mark.parametrize("name, key", [("", None), ("   ", None), (None, None),
                                       ("x.pdf", ""), ("x.pdf", "   "),
                                       ("x.pdf", 7)])
def test_a_blank_name_or_key_is_refused_and_nothing_is_written(drive_path, name,
                                                               key):
    """Bug: ``rename_to``'s door with ``and`` for ``or``: a file renamed to
    nothing, or a rename under a blank operation key, is written."""
    with pytest.raises(ValueError):
        drive.rename_to(drive_path, "f001", name, operation_key=key)
    assert requests(drive_path) == []
    assert drive.names(drive_path)["f001"] == "scan-001.pdf"


def test_a_drive_installed_with_a_bad_file_holds_none_of_them(tmp_path):
    """Bug: ``drive.install`` adds its files outside one transaction: a bad
    one leaves the drive half set up."""
    path = tmp_path / "drive.sqlite"
    with pytest.raises(sqlite3.IntegrityError):
        drive.install(path, {"f001": "scan-001.pdf", "f002": None})
    assert drive.names(path) == {}


def test_the_wrong_probe_finds_nothing_when_no_file_has_the_name(drive_path):
    """Bug: ``probe_rename_by_name`` says done when NO file has the name: the
    chapter's wrong probe must be wrong only the way the chapter says."""
    assert drive.probe_rename_by_name(drive_path, "f001", "nowhere.pdf") == (
        False, {"file_id": "f001", "name": "scan-001.pdf"})


def test_a_compare_and_set_refusal_says_what_it_found():
    """Bug: ``NameChanged`` without its message."""
    changed = drive.NameChanged("f003", "invoice.pdf", "kept.pdf")
    assert str(changed) == "f003 is called 'kept.pdf', not 'invoice.pdf': left as it is"
