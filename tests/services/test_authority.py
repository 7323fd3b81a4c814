"""Chapter 03: authority for a new payment versus the history of an old one."""

from __future__ import annotations

import time

import pytest

from crashcourse.services import payments
from crashcourse.services.payments import authority
from crashcourse.store import opened

ORDER, AMOUNT, CURRENCY = "restock-17", 4000, "USD"
USD = "USD"


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    payments.approve(path, ORDER, AMOUNT, CURRENCY)
    return path


def pay(db, key="k1", amount=AMOUNT, currency=CURRENCY):
    return payments.issue_payment(db, key, ORDER, amount, currency)


def refusal(db, key="k1", **action) -> str:
    with pytest.raises(payments.ApprovalRefused) as caught:
        pay(db, key, **action)
    assert isinstance(caught.value, PermissionError)
    return caught.value.reason


def count(db) -> int:
    return len(payments.snapshot(db)["payments"])


def test_revoke_before_payment_refuses_and_writes_nothing(db):
    payments.revoke(db, ORDER)
    assert refusal(db) == "approval_revoked"
    assert count(db) == 0


def test_revoke_after_payment_replays_without_restoring_approval(db):
    assert pay(db) == "committed"
    payments.revoke(db, ORDER)
    assert pay(db) == "already_committed"
    assert refusal(db, key="k2") == "approval_revoked"
    assert count(db) == 1
    assert payments.snapshot(db)["approvals"][0]["revoked"] == 1


@pytest.mark.parametrize("change", [{"amount": 4100}, {"currency": "EUR"}])
def test_key_cannot_be_repurposed(db, change):
    assert pay(db) == "committed"
    with pytest.raises(payments.PaymentConflict):
        pay(db, **change)
    assert payments.snapshot(db)["payments"][0]["amount_cents"] == AMOUNT
    assert count(db) == 1


def test_key_for_another_order_conflicts(db):
    pay(db)
    payments.approve(db, "restock-18", AMOUNT, CURRENCY)
    with pytest.raises(payments.PaymentConflict):
        payments.issue_payment(db, "k1", "restock-18", AMOUNT, CURRENCY)


def test_unapproved_amount_is_not_approved(db):
    assert refusal(db, amount=AMOUNT + 1) == "not_approved"


def test_expiry_refuses_new_payment_but_not_replay(db):
    assert pay(db) == "committed"
    authority.set_expiry(db, ORDER, time.time() - 60)  # stored already past
    assert pay(db) == "already_committed"
    assert refusal(db, key="k2") == "approval_expired"


def test_expiry_in_the_future_allows(db):
    authority.set_expiry(db, ORDER, time.time() + 3600)
    assert pay(db) == "committed"


def test_policy_change_refuses_until_granted_again(db):
    authority.set_policy_version(db, 2)
    assert refusal(db) == "policy_changed"
    payments.approve(db, ORDER, AMOUNT, CURRENCY)  # re-granted under version 2
    assert pay(db) == "committed"
    assert authority.payment_history(db, "k1")["policy_version"] == 2


def test_expiry_and_policy_change_independently(db):
    payments.approve(db, ORDER, AMOUNT, CURRENCY, expires_unix=time.time() + 3600)
    authority.set_policy_version(db, 3)
    assert refusal(db) == "policy_changed"  # unexpired, but outdated
    payments.approve(db, ORDER, AMOUNT, CURRENCY, expires_unix=time.time() - 1)
    assert refusal(db) == "approval_expired"  # current policy, but expired


def test_refusal_order_is_fixed():
    action = {"amount_cents": 1, "currency": "USD"}
    approval = {"amount_cents": 1, "currency": "USD", "revoked": 1,
                "expires_unix": 0.0, "policy_version": 1}
    assert authority.refusal_reason(approval, action, 10.0, 2) == "approval_revoked"
    approval["revoked"] = 0
    assert authority.refusal_reason(approval, action, 10.0, 2) == "approval_expired"
    approval["expires_unix"] = None
    assert authority.refusal_reason(approval, action, 10.0, 2) == "policy_changed"
    assert authority.refusal_reason(approval, action, 10.0, 1) is None
    assert authority.refusal_reason(None, action, 10.0, 1) == "not_approved"


def test_history_keeps_the_terms_a_payment_was_allowed_under(db):
    expires = time.time() + 3600
    payments.approve(db, ORDER, AMOUNT, CURRENCY, expires_unix=expires)
    pay(db)
    payments.revoke(db, ORDER)
    authority.set_policy_version(db, 5)
    history = authority.payment_history(db, "k1")
    assert (history["policy_version"], history["expires_unix"]) == (1, expires)
    assert authority.payment_history(db, "missing") is None


@pytest.mark.parametrize(
    "terms",
    [{"expires_unix": True}, {"expires_unix": float("nan")}, {"expires_unix": "soon"},
     {"policy_version": 0}, {"policy_version": 1.5}, {"policy_version": False}],
)
def test_bad_terms_are_refused_with_nothing_written(tmp_path, terms):
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    with pytest.raises((TypeError, ValueError)):
        payments.approve(path, ORDER, AMOUNT, CURRENCY, **terms)
    assert payments.snapshot(path)["approvals"] == []


def test_bad_policy_version_is_refused(db):
    with pytest.raises(ValueError):
        authority.set_policy_version(db, 0)


# --- guarantees (was tests/test_guarantees_payments.py): each test defends one
# guarantee against the one-line bug named in its docstring


def test_an_approval_is_expired_at_its_expiry_instant():
    """Bug: the expiry compares with ``>`` (one more payment at the instant)."""
    action = {"amount_cents": 100, "currency": USD}
    approval = {"amount_cents": 100, "currency": USD, "revoked": 0,
                "expires_unix": 1000.0, "policy_version": 1}
    assert authority.refusal_reason(approval, action, 1000.0, 1) == "approval_expired"
    assert authority.refusal_reason(approval, action, 999.999, 1) is None


def test_an_approval_keeps_the_policy_version_it_was_granted_under(tmp_path):
    """Bug: ``approve(policy_version=...)`` stores the current version instead."""
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    payments.approve(path, "o1", 100, USD, policy_version=2)  # the service is at 1
    with pytest.raises(payments.ApprovalRefused, match="policy_changed"):
        payments.issue_payment(path, "k1", "o1", 100, USD)
    authority.set_policy_version(path, 2)
    assert payments.issue_payment(path, "k1", "o1", 100, USD) == "committed"
    assert authority.payment_history(path, "k1")["policy_version"] == 2


def test_the_first_policy_version_is_one_and_it_is_accepted(db):
    """Bug: ``check_terms`` refuses ``policy_version <= 1``: the version a
    service starts at could not be named."""
    payments.approve(db, "o-1", AMOUNT, CURRENCY, policy_version=1)
    authority.set_policy_version(db, 1)
    with pytest.raises(ValueError):
        authority.set_policy_version(db, 0)
    assert payments.issue_payment(db, "k-1", "o-1", AMOUNT, CURRENCY) == "committed"
    assert authority.payment_history(db, "k-1")["policy_version"] == 1


def test_an_approval_expires_at_its_exact_instant_on_an_injected_clock():
    """The expiry rule on a clock either side of ``expires_unix``: ``>=``."""
    approval = {"amount_cents": AMOUNT, "currency": CURRENCY, "revoked": 0,
                "expires_unix": 1000.0, "policy_version": 2}
    action = {"amount_cents": AMOUNT, "currency": CURRENCY}
    assert authority.refusal_reason(approval, action, 999.999, 2) is None
    assert authority.refusal_reason(approval, action, 1000.0, 2) == "approval_expired"
    assert authority.refusal_reason(approval, action, 999.0, 3) == "policy_changed"


@pytest.mark.parametrize("expiry", [float("nan"), float("inf"), "soon", True])
def test_a_bad_expiry_is_refused_and_the_terms_kept(db, expiry):
    """Bug: ``set_expiry`` without its ``check_terms``: an expiry no clock
    can pass (NaN compares false with every instant) is stored."""
    authority.set_expiry(db, ORDER, 2_000_000_000.0)
    with pytest.raises(TypeError):
        authority.set_expiry(db, ORDER, expiry)
    with opened(db) as conn:
        assert authority.read_approval(conn, ORDER)["expires_unix"] == 2_000_000_000.0
