"""Grades exercise 04.2 (capacity.py)."""

import pytest

from crashcourse.services import payments
from crashcourse.store import immediate, opened
from crashcourse.workers import paying


@pytest.fixture
def room_for(answer):
    return answer("ch04", "capacity").room_for


def service(tmp_path, **policy):
    db = tmp_path / "payments.db"
    payments.install(db, **policy)
    payments.approve(db, "PO-1", 4000, "USD")
    return db


def ask(db, room_for, amount=4000, currency="USD"):
    with opened(db) as conn, immediate(conn):
        return room_for(conn, amount, currency)


def test_no_policy_no_limit(tmp_path, room_for):
    db = service(tmp_path)
    payments.issue_payment(db, "k1", "PO-1", 4000, "USD")
    assert ask(db, room_for) is None


def test_action_limit_from_rows_not_checkpoints(tmp_path, room_for):
    db = service(tmp_path, max_actions=1, currency_caps={"USD": 10_000})
    assert ask(db, room_for) is None
    with opened(tmp_path / "worker.db") as state:  # the worker's own file
        paying.install(state)
        paid = paying.pay_then_checkpoint(state, db, "restock-1", "k1", "PO-1",
                                          4000, "USD")
        assert paid == {"outcome": "committed"}
        state.execute("DELETE FROM checkpoints")  # a lost checkpoint
        assert paying.checkpoints(state) == []
    assert ask(db, room_for) == "budget_action_limit"


@pytest.mark.parametrize(
    ("caps", "amount", "currency", "reason"),
    [({"USD": 8000}, 4000, "USD", None),
     ({"USD": 8000}, 4001, "USD", "budget_currency_cap"),
     ({"USD": 8000, "EUR": 0}, 1, "EUR", "budget_currency_cap"),
     ({"USD": 8000}, 1, "GBP", "budget_currency_cap")],
)
def test_currency_caps(tmp_path, room_for, caps, amount, currency, reason):
    db = service(tmp_path, max_actions=5, currency_caps=caps)
    payments.issue_payment(db, "k1", "PO-1", 4000, "USD")
    assert ask(db, room_for, amount, currency) == reason
