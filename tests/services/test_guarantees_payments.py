"""Operation keys, the budget and an approval's terms (chapters 01-04): each
test defends one guarantee against the one-line bug named in its docstring."""

from __future__ import annotations

import sqlite3

import pytest

from crashcourse import effects
from crashcourse.services import payments
from crashcourse.services.payments import authority, budget
from crashcourse.store import opened

USD, EUR = "USD", "EUR"


def test_the_step_is_part_of_the_key():
    """Bug: the key is derived without the step number."""
    keys = {effects.operation_key("restock-7", step, "rename", {"file": "f001"})
            for step in range(1, 51)}
    assert len(keys) == 50


def test_thousands_of_argument_sets_never_share_a_key():
    """Bug: the key keeps too little of the digest (two actions, one key)."""
    keys = {effects.operation_key("restock-7", 1, "order", {"n": n})
            for n in range(5000)}
    assert len(keys) == 5000


def test_each_currency_counts_its_own_payments(tmp_path):
    """Bug: consumption reads one currency's sum and drops the others."""
    path = tmp_path / "payments.sqlite"
    payments.install(path, max_actions=5, currency_caps={USD: 5000, EUR: 3000})
    for order, amount, currency in (("u1", 4000, USD), ("e1", 2500, EUR)):
        payments.approve(path, order, amount, currency)
        payments.issue_payment(path, order, order, amount, currency)
    snap = budget.budget_snapshot(path)
    assert snap["charged_cents"] == {EUR: 2500, USD: 4000}
    assert snap["remaining_cents"] == {EUR: 500, USD: 1000}
    payments.approve(path, "e2", 600, EUR)
    with pytest.raises(payments.BudgetExhausted, match="budget_currency_cap"):
        payments.issue_payment(path, "e2", "e2", 600, EUR)  # 2500 + 600 > 3000


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
