"""Random sequences against the payment service, checked against a small model.

approve / revoke / expire / change the policy / issue (fresh keys, replayed keys,
replayed keys with a changed payload), on a budgeted service. Each issue must get
the answer the model predicts; at the end the ledger never exceeds a cap,
each key names one action, and the budget snapshot equals the committed rows.

A second property walks the budget's edge with small integers, where random
sequences above rarely get: the last action and the last cent fit, one more does
not, and a replay of a committed key needs neither authority nor budget.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from crashcourse import store
from crashcourse.services import payments
from crashcourse.services.payments import authority, budget

MAX_ACTIONS = 3
CAPS = {"USD": 5000, "EUR": 2500}
ORDERS = ("o1", "o2")
KEYS = ("k1", "k2", "k3", "k4", "k5")
AMOUNTS = (1000, 2500, 4000)

orders, keys = st.sampled_from(ORDERS), st.sampled_from(KEYS)
amounts, currencies = st.sampled_from(AMOUNTS), st.sampled_from(("USD", "EUR"))
steps = st.one_of(
    st.tuples(st.just("approve"), orders, amounts, currencies),
    st.tuples(st.just("revoke"), orders),
    st.tuples(st.just("expire"), orders),
    st.tuples(st.just("policy")),
    st.tuples(st.just("issue"), keys, orders, amounts, currencies),
    *[st.tuples(st.just("issue_approved"), keys, orders)] * 3,  # approved action
)


class Model:
    """What the service should answer, kept in plain dicts."""

    def __init__(self):
        self.approvals: dict[str, dict] = {}
        self.policy = 1
        self.committed: dict[str, tuple] = {}

    def issue(self, key, order, amount, currency) -> str:
        if key in self.committed:
            same = self.committed[key] == (order, amount, currency)
            return "already_committed" if same else "conflict"
        grant = self.approvals.get(order)
        if grant is None or grant["action"] != (amount, currency):
            return "not_approved"
        for reason in ("approval_revoked", "approval_expired"):
            if grant[reason]:
                return reason
        if grant["policy"] != self.policy:
            return "policy_changed"
        if len(self.committed) + 1 > MAX_ACTIONS:
            return "budget_action_limit"
        spent = sum(a for _, a, c in self.committed.values() if c == currency)
        if spent + amount > CAPS[currency]:
            return "budget_currency_cap"
        self.committed[key] = (order, amount, currency)
        return "committed"


def apply(path: Path, model: Model, step: tuple) -> None:
    name, *args = step
    if name == "approve":
        order, amount, currency = args
        payments.approve(path, order, amount, currency)
        model.approvals[order] = {"action": (amount, currency), "policy": model.policy,
                                  "approval_revoked": False, "approval_expired": False}
    elif name in ("revoke", "expire") and args[0] in model.approvals:
        if name == "revoke":
            payments.revoke(path, args[0])
        else:  # a stored expiry that is already in the past
            authority.set_expiry(path, args[0], time.time() - 1)
        model.approvals[args[0]][f"approval_{name}d"] = True
    elif name == "policy":
        model.policy += 1
        authority.set_policy_version(path, model.policy)
    elif name == "issue_approved":
        grant = model.approvals.get(args[1], {"action": (AMOUNTS[0], "USD")})
        apply(path, model, ("issue", *args, *grant["action"]))
    elif name == "issue":
        assert issue(path, *args) == model.issue(*args), step


def issue(path: Path, key, order, amount, currency) -> str:
    try:
        return payments.issue_payment(path, key, order, amount, currency)
    except payments.PaymentConflict:
        return "conflict"
    except payments.ApprovalRefused as refused:
        return refused.reason


def check_invariants(path: Path, model: Model) -> None:
    with store.opened(path) as conn:
        rows = store.table_rows(conn, "payments")
    assert len(rows) <= MAX_ACTIONS
    for currency, cap in CAPS.items():
        assert sum(r["amount_cents"] for r in rows if r["currency"] == currency) <= cap
    assert len({r["key"] for r in rows}) == len(rows)  # one action per key
    ledger = {r["key"]: (r["order_id"], r["amount_cents"], r["currency"]) for r in rows}
    assert ledger == model.committed
    snap = budget.budget_snapshot(path)
    assert snap["charged_actions"] == len(rows)
    for currency in CAPS:
        charged = sum(r["amount_cents"] for r in rows if r["currency"] == currency)
        assert snap["charged_cents"].get(currency, 0) == charged
        assert snap["remaining_cents"][currency] == CAPS[currency] - charged


@settings(max_examples=15, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(steps, min_size=10, max_size=20))
def test_service_matches_model(sequence):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "payments.sqlite"
        payments.install(path, max_actions=MAX_ACTIONS, currency_caps=CAPS)
        model = Model()
        for step in sequence:
            apply(path, model, step)
        check_invariants(path, model)


def edge_answer(charged: list[int], max_actions: int, cap: int, amount: int) -> str:
    """The model at the budget's edge: the last unit fits, one more does not."""
    if len(charged) + 1 > max_actions:
        return "budget_action_limit"
    if sum(charged) + amount > cap:
        return "budget_currency_cap"
    return "committed"


@example(max_actions=2, cap=9, amounts=[1, 1, 1])  # last action fits, one more not
@example(max_actions=3, cap=3, amounts=[2, 1, 1])  # last cent fits, one more not
@settings(max_examples=20, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(max_actions=st.integers(0, 3), cap=st.integers(0, 6),
       amounts=st.lists(st.integers(1, 4), min_size=1, max_size=5))
def test_budget_edge_is_exact(max_actions, cap, amounts):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "payments.sqlite"
        payments.install(path, max_actions=max_actions, currency_caps={"USD": cap})
        charged: dict[str, tuple] = {}
        for i, amount in enumerate(amounts):  # a fresh, approved action each time
            payments.approve(path, f"o{i}", amount, "USD")
            spent = [a for _, a in charged.values()]
            expected = edge_answer(spent, max_actions, cap, amount)
            assert issue(path, f"k{i}", f"o{i}", amount, "USD") == expected, (i, spent)
            if expected == "committed":
                charged[f"k{i}"] = (f"o{i}", amount)
        snap = budget.budget_snapshot(path)
        assert snap["remaining_actions"] == max_actions - len(charged) >= 0
        remaining = cap - sum(a for _, a in charged.values())
        assert snap["remaining_cents"] == {"USD": remaining} and remaining >= 0
        for i in range(len(amounts)):  # withdraw all authority; history stays
            payments.revoke(path, f"o{i}")
        for key, (order, amount) in charged.items():  # no approval, maybe no budget
            assert issue(path, key, order, amount, "USD") == "already_committed", key
        assert budget.budget_snapshot(path)["charged_actions"] == len(charged)
