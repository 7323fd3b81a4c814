"""Grades exercise 04.2 (capacity.py): the allowance per round, from rows."""

import pytest

from crashcourse import authority
from crashcourse.services import payments
from crashcourse.store import immediate, opened
from crashcourse.workers import paying

ROUND = 1_800_000_000.0  # this round began here (wall-clock seconds)
BEFORE = 0.0  # a round that began before any payment in these tests


@pytest.fixture
def room_for(answer):
    return answer("ch04", "capacity").room_for


def service(tmp_path, **policy):
    db = tmp_path / "payments.db"
    payments.install(db, **policy)
    payments.approve(db, "PO-1", 4000, "USD")
    return db


def ask(db, room_for, amount=4000, currency="USD", round_start=BEFORE):
    with opened(db) as conn, immediate(conn):
        return room_for(conn, amount, currency, round_start)


def paid_at(db, key, amount, currency, committed_unix):
    """A payment row and its evidence, committed at ``committed_unix`` (None:
    a row imported without evidence)."""
    with opened(db) as conn, immediate(conn):
        conn.execute(
            "INSERT INTO payments (key, order_id, amount_cents, currency)"
            " VALUES (:key, :order, :amount, :currency)",
            {"key": key, "order": f"PO-{key}", "amount": amount,
             "currency": currency})
        if committed_unix is not None:
            conn.execute(
                "INSERT INTO payment_evidence"
                " (key, policy_version, expires_unix, committed_unix)"
                " VALUES (:key, 1, NULL, :at)", {"key": key, "at": committed_unix})


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
    ids=["fits", "one-cent-over", "zero-cap", "uncapped-currency"],
)
def test_currency_caps(tmp_path, room_for, caps, amount, currency, reason):
    db = service(tmp_path, max_actions=5, currency_caps=caps)
    payments.issue_payment(db, "k1", "PO-1", 4000, "USD")
    assert ask(db, room_for, amount, currency) == reason


def test_a_new_round_starts_after_the_last_payment(tmp_path, room_for):
    db = service(tmp_path, max_actions=1, currency_caps={"USD": 4000})
    payments.issue_payment(db, "k1", "PO-1", 4000, "USD")
    committed = authority.payment_history(db, "k1")["committed_unix"]
    assert ask(db, room_for, round_start=committed) == "budget_action_limit"
    assert ask(db, room_for, round_start=committed + 0.001) is None


@pytest.mark.parametrize(
    ("committed_unix", "reason"),
    [(ROUND - 10, None), (ROUND, "budget_action_limit"),
     (ROUND + 10, "budget_action_limit"), (None, "budget_action_limit")],
    ids=["earlier-round", "at-the-start", "this-round", "no-evidence"],
)
def test_which_payments_belong_to_the_round(tmp_path, room_for, committed_unix,
                                            reason):
    db = service(tmp_path, max_actions=1, currency_caps={"USD": 8000})
    paid_at(db, "k1", 1000, "USD", committed_unix)
    assert ask(db, room_for, 1000, round_start=ROUND) == reason


def test_the_cap_counts_this_rounds_cents_in_this_currency(tmp_path, room_for):
    db = service(tmp_path, max_actions=9, currency_caps={"USD": 8000, "EUR": 500})
    paid_at(db, "old", 6000, "USD", ROUND - 3600)  # last round's
    paid_at(db, "eur", 500, "EUR", ROUND + 1)  # this round, another currency
    paid_at(db, "new", 4000, "USD", ROUND + 2)
    assert ask(db, room_for, 4000, round_start=ROUND) is None
    assert ask(db, room_for, 4001, round_start=ROUND) == "budget_currency_cap"
    assert ask(db, room_for, 1, "EUR", round_start=ROUND) == "budget_currency_cap"
