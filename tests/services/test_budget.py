"""Chapter 04: a budget whose consumption is derived from committed payments."""

from __future__ import annotations

import pytest

from crashcourse import store
from crashcourse.services import payments
from crashcourse.services.payments import budget
from crashcourse.workers import paying

USD, EUR = "USD", "EUR"


def service(tmp_path, max_actions=2, caps=None, orders=("o1", "o2", "o3")):
    path = tmp_path / "payments.sqlite"
    payments.install(path, max_actions=max_actions,
                        currency_caps={USD: 8000} if caps is None else caps)
    for order in orders:
        payments.approve(path, order, 4000, USD)
    return path


def refused(path, key, order, amount=4000, currency=USD) -> str:
    with pytest.raises(payments.BudgetExhausted) as caught:
        payments.issue_payment(path, key, order, amount, currency)
    assert isinstance(caught.value, PermissionError)
    return caught.value.reason


def test_action_limit_and_replay(tmp_path):
    path = service(tmp_path, max_actions=1, caps={USD: 4000})
    assert payments.issue_payment(path, "a", "o1", 4000, USD) == "committed"
    assert payments.issue_payment(path, "a", "o1", 4000, USD) == "already_committed"
    assert refused(path, "b", "o2") == "budget_action_limit"
    snap = budget.budget_snapshot(path)
    assert (snap["charged_actions"], snap["remaining_actions"]) == (1, 0)
    assert snap["charged_cents"] == {USD: 4000}
    assert snap["remaining_cents"] == {USD: 0}


def test_currency_cap_is_separate_from_the_count(tmp_path):
    path = service(tmp_path, max_actions=5, caps={USD: 6000, "EUR": 0})
    payments.approve(path, "e1", 100, "EUR")
    payments.issue_payment(path, "a", "o1", 4000, USD)
    assert refused(path, "b", "o2") == "budget_currency_cap"
    assert refused(path, "c", "e1", 100, "EUR") == "budget_currency_cap"  # zero cap
    payments.approve(path, "g1", 100, "GBP")
    assert refused(path, "d", "g1", 100, "GBP") == "budget_currency_cap"  # no cap


def test_zero_actions_is_a_valid_budget(tmp_path):
    path = service(tmp_path, max_actions=0, caps={USD: 8000})
    assert refused(path, "a", "o1") == "budget_action_limit"
    assert budget.budget_snapshot(path)["remaining_actions"] == 0


def test_losing_the_checkpoint_does_not_restore_the_allowance(tmp_path):
    path = service(tmp_path, max_actions=1)
    payments.issue_payment(path, "a", "o1", 4000, USD)
    worker_file = tmp_path / "worker.sqlite"
    with store.opened(worker_file) as state:
        paying.install(state)
        paying.save_checkpoint(state, "task", "a", "committed")
    worker_file.unlink()  # the worker's whole record is gone, not just a row
    assert payments.issue_payment(path, "a", "o1", 4000, USD) == "already_committed"
    assert refused(path, "b", "o2") == "budget_action_limit"
    assert budget.budget_snapshot(path)["charged_actions"] == 1


def test_snapshot_is_derived_from_rows(tmp_path):
    path = service(tmp_path, max_actions=3)
    payments.issue_payment(path, "a", "o1", 4000, USD)
    with store.opened(path) as conn, store.immediate(conn):  # a row gone: so is use
        conn.execute("DELETE FROM payment_evidence")
        conn.execute("DELETE FROM payments")
    assert budget.budget_snapshot(path)["charged_actions"] == 0


def test_unbudgeted_service_is_unchanged(tmp_path):
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    payments.approve(path, "o1", 4000, USD)
    for key in "abc":
        payments.issue_payment(path, key, "o1", 4000, USD)
    snap = budget.budget_snapshot(path)
    assert snap["budgeted"] is False and snap["charged_actions"] == 3
    assert snap["remaining_actions"] is None


@pytest.mark.parametrize(
    ("max_actions", "caps", "error"),
    [(True, {USD: 1}, TypeError), (-1, {USD: 1}, ValueError),
     (1.0, {USD: 1}, TypeError), (10**9, {USD: 1}, ValueError),
     (1, {USD: False}, TypeError), (1, {USD: -5}, ValueError),
     (1, {USD: 2.5}, TypeError), (1, {USD: 10**15}, ValueError),
     (1, {"usd": 1}, ValueError), (1, None, TypeError), (None, {USD: 1}, TypeError),
     (1, [(USD, 1)], TypeError)],
)
def test_bad_policy_is_refused_with_nothing_written(tmp_path, max_actions, caps, error):
    path = tmp_path / "payments.sqlite"
    with pytest.raises(error):
        payments.install(path, max_actions=max_actions, currency_caps=caps)
    assert not path.exists()  # refused before the file was even created


def test_policy_is_stored_before_any_payment(tmp_path):
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    payments.approve(path, "o1", 4000, USD)
    payments.issue_payment(path, "a", "o1", 4000, USD)
    with pytest.raises(budget.BudgetPolicyError):
        budget.set_budget(path, 1, {USD: 4000})
    assert budget.budget_snapshot(path)["budgeted"] is False


def test_policy_is_set_once(tmp_path):
    path = service(tmp_path, max_actions=2)
    payments.install(path, max_actions=2, currency_caps={USD: 8000})  # same: fine
    with pytest.raises(budget.BudgetPolicyError):
        payments.install(path, max_actions=9, currency_caps={USD: 8000})
    assert budget.budget_snapshot(path)["max_actions"] == 2


def test_busy_database_is_a_clear_error_not_an_uncapped_charge(tmp_path):
    path = service(tmp_path, max_actions=2)
    with store.opened(path) as holder:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        with pytest.raises(payments.PaymentServiceBusy):
            payments.issue_payment(path, "a", "o1", 4000, USD, busy_timeout_ms=50)
        holder.execute("ROLLBACK")
    assert budget.budget_snapshot(path)["charged_actions"] == 0
    assert payments.issue_payment(path, "a", "o1", 4000, USD) == "committed"


def test_refusal_order_replay_then_approval_then_budget(tmp_path):
    path = service(tmp_path, max_actions=1)
    payments.issue_payment(path, "a", "o1", 4000, USD)
    payments.revoke(path, "o2")
    with pytest.raises(payments.ApprovalRefused) as caught:
        payments.issue_payment(path, "b", "o2", 4000, USD)
    assert caught.value.reason == "approval_revoked"  # authority before capacity
    payments.revoke(path, "o1")
    assert payments.issue_payment(path, "a", "o1", 4000, USD) == "already_committed"


# --- guarantees (was tests/test_guarantees_payments.py): each test defends one
# guarantee against the one-line bug named in its docstring


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
