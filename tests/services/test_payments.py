"""The payment service (chapters 01-02): replay, conflict, authority, bad input."""

from __future__ import annotations

import sqlite3

import pytest

from crashcourse.effects import EffectConflict
from crashcourse.services import payments
from crashcourse.store import opened
from crashcourse.workers import paying

ORDER, AMOUNT, CURRENCY = "SUP-0042", 4000, "USD"
KEY = "restock-0042/1/pay_invoice"
USD = "USD"


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    payments.approve(path, ORDER, AMOUNT, CURRENCY)
    return path


def paid(db) -> list[dict]:
    return payments.snapshot(db)["payments"]


def test_first_call_commits_and_the_same_call_replays(db):
    assert payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY) == "committed"
    again = payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY)
    assert again == "already_committed"
    assert [p["key"] for p in paid(db)] == [KEY]


def test_a_new_key_is_a_new_payment(db):
    payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY)
    payments.issue_payment(db, KEY + "#again", ORDER, AMOUNT, CURRENCY)
    assert len(paid(db)) == 2  # the service cannot tell: identity is the key


@pytest.mark.parametrize(
    "changed",
    [("SUP-0043", AMOUNT, CURRENCY), (ORDER, 4001, CURRENCY), (ORDER, AMOUNT, "EUR")],
    ids=["order", "amount", "currency"],
)
def test_changed_payload_under_a_used_key_conflicts(db, changed):
    payments.approve(db, "SUP-0043", AMOUNT, CURRENCY)
    payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY)
    before = payments.snapshot(db)
    with pytest.raises(payments.PaymentConflict) as raised:
        payments.issue_payment(db, KEY, *changed)
    assert isinstance(raised.value, EffectConflict)
    assert payments.snapshot(db) == before


def test_no_approval_refuses_a_new_payment(tmp_path):
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    with pytest.raises(payments.ApprovalRefused) as raised:
        payments.issue_payment(path, KEY, ORDER, AMOUNT, CURRENCY)
    assert isinstance(raised.value, PermissionError)
    assert raised.value.reason == "not_approved"
    assert paid(path) == []


def test_approval_for_another_amount_is_no_approval(db):
    with pytest.raises(payments.ApprovalRefused):
        payments.issue_payment(db, KEY, ORDER, AMOUNT + 1, CURRENCY)
    assert paid(db) == []


def test_revoked_before_payment_refuses_and_writes_nothing(db):
    payments.revoke(db, ORDER)
    with pytest.raises(payments.ApprovalRefused) as raised:
        payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY)
    assert raised.value.reason == "approval_revoked"
    assert paid(db) == []


def test_replay_is_checked_before_authority(db):
    payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY)
    payments.revoke(db, ORDER)
    # History needs no current approval ...
    assert payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY) == (
        "already_committed"
    )
    # ... a NEW effect always does.
    with pytest.raises(payments.ApprovalRefused):
        payments.issue_payment(db, KEY + "#new", ORDER, AMOUNT, CURRENCY)
    assert len(paid(db)) == 1


def test_checkpoint_is_a_separate_record_in_a_separate_file(db, tmp_path):
    with opened(tmp_path / "worker.sqlite") as state:
        paying.install(state)
        assert paying.load_checkpoint(state, "restock-0042") is None
        payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY)
        assert paying.load_checkpoint(state, "restock-0042") is None  # the gap
        paying.save_checkpoint(state, "restock-0042", KEY, "committed")
        saved = paying.load_checkpoint(state, "restock-0042")
        assert (saved["key"], saved["outcome"]) == (KEY, "committed")
        assert [row["task"] for row in paying.checkpoints(state)] == ["restock-0042"]
    assert len(paid(db)) == 1
    assert set(payments.snapshot(db)) == {"payments", "approvals"}  # no checkpoint
    with opened(db) as service:  # the service's file has no checkpoint table
        tables = {row[0] for row in service.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "checkpoints" not in tables


BAD_AMOUNTS = [True, False, 40.0, float("nan"), float("inf"), -4000, 0, "4000", None]


@pytest.mark.parametrize("amount", BAD_AMOUNTS, ids=repr)
def test_bad_amount_is_a_typed_error_and_no_row(db, amount):
    with pytest.raises((TypeError, ValueError)):
        payments.issue_payment(db, KEY, ORDER, amount, CURRENCY)
    assert paid(db) == []


def test_overflow_sized_amount_is_refused(db):
    with pytest.raises(ValueError):
        payments.issue_payment(db, KEY, ORDER, 10**30, CURRENCY)
    assert paid(db) == []


@pytest.mark.parametrize("currency", ["usd", "US", "USDX", "", " USD", 840, None])
def test_malformed_currency_is_refused_and_no_row(db, currency):
    with pytest.raises(ValueError):
        payments.issue_payment(db, KEY, ORDER, AMOUNT, currency)
    assert paid(db) == []


@pytest.mark.parametrize("key", ["", "   ", None, 7])
def test_empty_key_is_refused_and_no_row(db, key):
    with pytest.raises(ValueError):
        payments.issue_payment(db, key, ORDER, AMOUNT, CURRENCY)
    assert paid(db) == []


@pytest.mark.parametrize("order", ["", "  ", None])
def test_empty_order_is_refused_and_no_row(db, order):
    with pytest.raises(ValueError):
        payments.issue_payment(db, KEY, order, AMOUNT, CURRENCY)
    assert paid(db) == []


@pytest.mark.parametrize("amount", [0, -1, 2.5, True])
def test_bad_approval_writes_no_approval(tmp_path, amount):
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    with pytest.raises((TypeError, ValueError)):
        payments.approve(path, ORDER, amount, CURRENCY)
    assert payments.snapshot(path)["approvals"] == []


# --- guarantees (was tests/test_guarantees_payments.py): each test defends one
# guarantee against the one-line bug named in its docstring


def test_a_fault_that_is_not_a_busy_store_is_not_called_busy(tmp_path):
    """Bug: every ``OperationalError`` becomes ``PaymentServiceBusy`` ("retry
    with the same key"), hiding a broken store behind a message about load."""
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    payments.approve(path, "o1", 100, USD)
    with opened(path) as conn:
        conn.execute("DROP TABLE payment_evidence")  # the store is damaged
    with pytest.raises(sqlite3.OperationalError, match="payment_evidence") as raised:
        payments.issue_payment(path, "k1", "o1", 100, USD)
    assert not isinstance(raised.value, payments.PaymentServiceBusy)
    assert payments.snapshot(path)["payments"] == []  # and nothing was charged


# --- issue 23: each fails on its one-line mutant ---------------------------------


class Killed(Exception):
    """Stands in for the process dying at a boundary."""


def test_the_kill_point_payment_inserted_is_inside_the_uncommitted_charge(db):
    """Bug: ``issue_payment`` without its ``payment_inserted`` boundary:
    chapter 04's kill there finds nothing. Dying there commits nothing."""
    from crashcourse.boundary import observing

    seen = []

    def dies(name):
        seen.append((name, len(paid(db))))  # a second connection's read
        raise Killed(name)

    with observing(dies), pytest.raises(Killed):
        payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY)
    assert seen == [("payment_inserted", 0)]
    assert paid(db) == []  # rolled back: the charge never happened
    assert payments.issue_payment(db, KEY, ORDER, AMOUNT, CURRENCY) == "committed"


@pytest.mark.parametrize("order", ["", "   ", None, 42])
def test_a_revocation_of_no_order_is_refused(db, order):
    """Bug: ``payments.revoke`` without its ``check_text``: a revocation of
    nothing is accepted in silence, and the caller believes it stopped one."""
    with pytest.raises((TypeError, ValueError)):
        payments.revoke(db, order)
    assert [a["revoked"] for a in payments.snapshot(db)["approvals"]] == [0]
