"""Grades exercise 04.2 (capacity.py): the allowance per round, from rows."""

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse.services import payments
from crashcourse.services.payments import authority
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
    """The answer, asked inside the caller's ``BEGIN IMMEDIATE``; on return the
    caller's transaction must still be open, still hold the write lock, and
    hold no change the answer made (it only reads)."""
    with opened(db) as conn, immediate(conn):
        before = conn.total_changes
        reason = room_for(conn, amount, currency, round_start)
        assert conn.in_transaction, "room_for ended the caller's transaction"
        assert conn.total_changes == before, "room_for wrote to the service"
        assert_write_lock_held(db)
        return reason


def assert_write_lock_held(db):
    """Another writer is refused at once: the caller still holds the lock its
    count was made under (a plain BEGIN re-opened after a commit does not)."""
    rival = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            rival.execute("BEGIN IMMEDIATE")
            pytest.fail("another writer took the write lock at once: the caller no"
                        " longer holds the lock its count was made under (a commit,"
                        " or a plain BEGIN after one, released it)")
    finally:
        rival.close()


def paid_at(db, key, amount, currency, committed_unix, order=None):
    """A payment row and its evidence, committed at ``committed_unix`` (None:
    a row imported without evidence)."""
    with opened(db) as conn, immediate(conn):
        conn.execute(
            "INSERT INTO payments (key, order_id, amount_cents, currency)"
            " VALUES (:key, :order, :amount, :currency)",
            {"key": key, "order": order or f"PO-{key}", "amount": amount,
             "currency": currency})
        if committed_unix is not None:
            conn.execute(
                "INSERT INTO payment_evidence"
                " (key, policy_version, expires_unix, committed_unix)"
                " VALUES (:key, 1, NULL, :at)", {"key": key, "at": committed_unix})


def test_no_policy_no_limit(tmp_path, room_for):
    db = service(tmp_path)
    payments.issue_payment(db, "k1", "PO-1", 4000, "USD")
    said = ask(db, room_for)
    assert said is None, (
        f"with no budget policy the payment was refused ({said!r}): no policy"
        " means no limit")


def test_action_limit_from_rows_not_checkpoints(tmp_path, room_for):
    db = service(tmp_path, max_actions=1, currency_caps={"USD": 10_000})
    said = ask(db, room_for)
    assert said is None, (
        f"the first payment of a round of one was refused ({said!r})")
    with opened(tmp_path / "worker.db") as state:  # the worker's own file
        paying.install(state)
        paid = paying.pay_then_checkpoint(state, db, "restock-1", "k1", "PO-1",
                                          4000, "USD")
        assert paid == {"outcome": "committed"}, (
            f"the set-up's payment did not commit: {paid}")
        state.execute("DELETE FROM checkpoints")  # a lost checkpoint
        assert paying.checkpoints(state) == [], "the set-up's checkpoint stayed"
    said = ask(db, room_for)
    assert said == "budget_action_limit", (
        f"a second payment in a round of one was answered {said!r}: the count"
        " must come from the service's payment rows, not the worker's"
        " checkpoints (one was lost)")


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
    said = ask(db, room_for, amount, currency)
    assert said == reason, (
        f"{amount} {currency} after 4000 USD paid, caps {caps}: answered"
        f" {said!r}, not {reason!r} (a currency without a cap allows nothing;"
        " the cap itself is allowed)")


def test_a_new_round_starts_after_the_last_payment(tmp_path, room_for):
    db = service(tmp_path, max_actions=1, currency_caps={"USD": 4000})
    payments.issue_payment(db, "k1", "PO-1", 4000, "USD")
    committed = authority.payment_history(db, "k1")["committed_unix"]
    said = ask(db, room_for, round_start=committed)
    assert said == "budget_action_limit", (
        f"a round starting at the last payment's commit was answered {said!r}:"
        " a payment committed at the round's start belongs to the round")
    said = ask(db, room_for, round_start=committed + 0.001)
    assert said is None, (
        f"a round starting just after the last payment was answered {said!r}:"
        " an earlier round's payments do not count")


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
    said = ask(db, room_for, 1000, round_start=ROUND)
    assert said == reason, (
        f"a payment committed at {committed_unix} (round starts {ROUND}):"
        f" answered {said!r}, not {reason!r} (a row without evidence counts in"
        " every round)")


def test_the_cap_counts_this_rounds_cents_in_this_currency(tmp_path, room_for):
    db = service(tmp_path, max_actions=9, currency_caps={"USD": 8000, "EUR": 500})
    paid_at(db, "old", 6000, "USD", ROUND - 3600)  # last round's
    paid_at(db, "eur", 500, "EUR", ROUND + 1)  # this round, another currency
    paid_at(db, "new", 4000, "USD", ROUND + 2)
    said = ask(db, room_for, 4000, round_start=ROUND)
    assert said is None, (
        f"4000 USD beside this round's 4000 USD under an 8000 cap: answered"
        f" {said!r}; last round's 6000 and this round's EUR do not count")
    said = ask(db, room_for, 4001, round_start=ROUND)
    assert said == "budget_currency_cap", (
        f"4001 USD beside this round's 4000 under an 8000 cap: answered {said!r}")
    said = ask(db, room_for, 1, "EUR", round_start=ROUND)
    assert said == "budget_currency_cap", (
        f"1 EUR beside this round's 500 under a 500 cap: answered {said!r}")


# --- any ledger: the answer against the rules, written out plainly ----------

CURRENCIES = ("USD", "EUR")
# When a payment committed, against the start of the round: well before, just
# before or after (the service's clock and the owner's need not agree), at it,
# or never said (an imported row).
COMMITTED = st.one_of(
    st.none(),
    st.sampled_from([-3600.0, -0.001, 0.0, 0.001, 60.0]),
    st.floats(min_value=-100.0, max_value=100.0, allow_nan=False))
PAYMENT = st.tuples(st.sampled_from(["PO-1", "PO-2"]),  # several keys per order
                    st.integers(min_value=1, max_value=5000),
                    st.sampled_from(CURRENCIES), COMMITTED)


def by_the_rules(max_actions, caps, ledger, amount, currency):
    """What the prompt says, one payment at a time in Python, no SQL."""
    this_round = [(cents, paid_in) for _, cents, paid_in, at in ledger
                  if at is None or at >= ROUND]
    if len(this_round) + 1 > max_actions:
        return "budget_action_limit"
    spent = sum(cents for cents, paid_in in this_round if paid_in == currency)
    if currency not in caps or spent + amount > caps[currency]:
        return "budget_currency_cap"
    return None


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(max_actions=st.integers(min_value=0, max_value=6),
       caps=st.dictionaries(st.sampled_from(CURRENCIES),
                            st.integers(min_value=0, max_value=12_000)),
       ledger=st.lists(PAYMENT, max_size=6),
       amount=st.integers(min_value=1, max_value=6000),
       currency=st.sampled_from((*CURRENCIES, "GBP")))
def test_any_ledger_is_judged_by_the_rules(room_for, max_actions, caps, ledger,
                                           amount, currency):
    """Generated ledgers: two currencies and an uncapped third, several
    payments per order, commit instants around the round's start, rows with no
    evidence, caps of zero."""
    ledger = [(order, cents, paid_in, None if offset is None else ROUND + offset)
              for order, cents, paid_in, offset in ledger]
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "payments.db"
        payments.install(db, max_actions=max_actions, currency_caps=caps)
        for n, (order, cents, paid_in, at) in enumerate(ledger):
            paid_at(db, f"k{n}", cents, paid_in, at, order)
        said = ask(db, room_for, amount, currency, round_start=ROUND)
        rules = by_the_rules(max_actions, caps, ledger, amount, currency)
        assert said == rules, (
            f"{amount} {currency} with max_actions {max_actions}, caps {caps},"
            f" ledger {ledger}: answered {said!r}, the rules say {rules!r}")


def test_the_callers_transaction_and_lock_survive(tmp_path, room_for):
    """The count is made under the caller's write lock and the lock is still
    held when the answer returns: committing it to "start clean" and opening a
    plain BEGIN again lets a rival pay between the count and the insert."""
    db = service(tmp_path, max_actions=2, currency_caps={"USD": 8000})
    payments.issue_payment(db, "k1", "PO-1", 4000, "USD")
    said = ask(db, room_for)
    assert said is None, f"a payment that fits was refused ({said!r})"
    said = ask(db, room_for, 4001)
    assert said == "budget_currency_cap", (
        f"4001 USD beside 4000 under an 8000 cap: answered {said!r}")
