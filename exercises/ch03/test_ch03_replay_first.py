"""Grades exercise 03.1 (replay_first.py)."""

import pytest

from crashcourse import authority
from crashcourse.services import payments

ORDER, AMOUNT, CURRENCY = "PO-3001", 4000, "USD"


@pytest.fixture
def issue(answer):
    return answer("ch03", "replay_first").issue_checked


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "payments.db"
    payments.install(path)
    payments.approve(path, ORDER, AMOUNT, CURRENCY)
    return path


def count(db):
    return len(payments.snapshot(db)["payments"])


def test_new_payment_commits(issue, db):
    assert issue(db, "k1", ORDER, AMOUNT, CURRENCY) == "committed"
    assert authority.payment_history(db, "k1")["policy_version"] == 1


def test_revoke_before_payment_refuses(issue, db):
    payments.revoke(db, ORDER)
    with pytest.raises(payments.ApprovalRefused) as caught:
        issue(db, "k1", ORDER, AMOUNT, CURRENCY)
    assert caught.value.reason == "approval_revoked" and count(db) == 0


def test_revoke_after_payment_replays(issue, db):
    issue(db, "k1", ORDER, AMOUNT, CURRENCY)
    payments.revoke(db, ORDER)
    assert issue(db, "k1", ORDER, AMOUNT, CURRENCY) == "already_committed"
    with pytest.raises(payments.ApprovalRefused):
        issue(db, "k2", ORDER, AMOUNT, CURRENCY)  # a fresh key is a new effect
    assert count(db) == 1


@pytest.mark.parametrize("change", [(AMOUNT + 100, CURRENCY), (AMOUNT, "EUR")])
def test_key_cannot_be_repurposed(issue, db, change):
    issue(db, "k1", ORDER, AMOUNT, CURRENCY)
    with pytest.raises(payments.PaymentConflict):
        issue(db, "k1", ORDER, *change)
    assert payments.snapshot(db)["payments"][0]["amount_cents"] == AMOUNT
