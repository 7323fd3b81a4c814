"""Grades exercise 02.2 (grader.py): a double charge found from durable rows."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse.lab.harness import Harness, kill_and_resume
from crashcourse.services import payments
from crashcourse.store import immediate, opened

ORDER, AMOUNT, CURRENCY = "PO-1001", 4000, "USD"


@pytest.fixture
def mod(answer, unchanged_file):
    """The answer, every call of it checked to leave the service's whole file
    as it was: schema (a view, a trigger, an index), pragmas and every row."""
    loaded = answer("ch02", "grader")

    def overcharged_orders(service):
        with unchanged_file(service):
            return loaded.overcharged_orders(service)

    return SimpleNamespace(overcharged_orders=overcharged_orders)


def install_service(path, approvals=((ORDER, AMOUNT, CURRENCY),)):
    payments.install(path)
    for approval in approvals:
        payments.approve(path, *approval)
    return path


def run_worker(service, retry: str):
    """Kill the worker after its payment and let a replacement run. Its
    checkpoint goes to its own file; the grader is never handed that file."""
    state = service.with_name(f"{service.stem}-worker.db")
    args = ["-m", "crashcourse.workers.pay_invoice", "--payments", str(service),
            "--state", str(state), "--task", "restock-1", "--order", ORDER,
            "--amount", str(AMOUNT), "--currency", CURRENCY, "--retry", retry]
    with Harness() as harness:
        trial = kill_and_resume(harness, args, "after_payment",
                                lambda: None, timeout=10)
    return trial


def test_the_mutant_is_caught_although_it_exited_zero(mod, tmp_path):
    service = install_service(tmp_path / "mutant.db")
    trial = run_worker(service, "new-key")
    assert trial.resumed_returncode == 0, (  # its own claim: success
        "the grader's world, not your answer: the mutant worker was to exit 0"
        f" after charging twice, and exited {trial.resumed_returncode}")
    found = mod.overcharged_orders(service)
    assert found == {
        (ORDER, CURRENCY): {"payments": 2, "charged_cents": 8000,
                            "approved_cents": 4000}
    }, ("the double charge of a worker that exited 0 was not reported from"
        f" the payment rows: overcharged_orders returned {found!r}")


def test_the_reference_is_clean(mod, tmp_path):
    service = install_service(tmp_path / "reference.db")
    run_worker(service, "reuse-key")
    found = mod.overcharged_orders(service)
    assert found == {}, (
        "an order paid once, within its approval, was reported as overcharged:"
        f" {found!r}")


def test_two_orders_paid_once_each_are_clean(mod, tmp_path):
    service = install_service(tmp_path / "two.db", [(ORDER, AMOUNT, CURRENCY),
                                                    ("PO-1002", 1250, "USD")])
    payments.issue_payment(service, "k1", ORDER, AMOUNT, CURRENCY)
    payments.issue_payment(service, "k2", "PO-1002", 1250, "USD")
    found = mod.overcharged_orders(service)
    assert found == {}, (
        "two orders each paid once within its approval were reported: each"
        f" order's payments must be compared with its own approval; {found!r}")


def test_only_the_overcharged_order_is_reported(mod, tmp_path):
    service = install_service(tmp_path / "mixed.db", [(ORDER, AMOUNT, CURRENCY),
                                                      ("PO-1002", 1250, "USD")])
    payments.issue_payment(service, "k1", ORDER, AMOUNT, CURRENCY)
    for key in ("k2", "k3", "k4"):
        payments.issue_payment(service, key, "PO-1002", 1250, "USD")
    found = mod.overcharged_orders(service)
    assert found == {
        ("PO-1002", "USD"): {"payments": 3, "charged_cents": 3750,
                             "approved_cents": 1250}
    }, ("not exactly the order paid three times was reported, with its count"
        f" and cents: {found!r}")


def test_a_revoked_approval_still_covers_its_one_payment(mod, tmp_path):
    service = install_service(tmp_path / "revoked.db")
    payments.issue_payment(service, "k1", ORDER, AMOUNT, CURRENCY)
    payments.revoke(service, ORDER)
    found = mod.overcharged_orders(service)
    assert found == {}, (
        "a payment made under an approval revoked later was reported: a revoked"
        f" approval still covers what it allowed; {found!r}")


def test_grading_writes_nothing(mod, tmp_path):
    """Not a row, and not the schema: ``mod`` checks every call against the
    whole file (a view or an index the answer leaves behind fails too)."""
    service = install_service(tmp_path / "read-only.db")
    payments.issue_payment(service, "k1", ORDER, AMOUNT, CURRENCY)
    payments.issue_payment(service, "k2", ORDER, AMOUNT, CURRENCY)
    before = payments.snapshot(service)
    found = mod.overcharged_orders(service)
    assert found.get((ORDER, CURRENCY), {}).get("payments") == 2, (
        f"the order paid twice was not reported with its 2 payments: {found!r}")
    assert payments.snapshot(service) == before, (
        "grading changed the service's rows: the grader must only read")


def import_payment(service, key, order, amount, currency=CURRENCY):
    """A payment row the service holds without having charged it through
    ``issue_payment`` (imported from its previous system)."""
    with opened(service) as conn, immediate(conn):
        conn.execute(
            "INSERT INTO payments (key, order_id, amount_cents, currency)"
            " VALUES (:key, :order, :amount, :currency)",
            {"key": key, "order": order, "amount": amount, "currency": currency},
        )


def test_a_payment_without_any_approval_is_overcharged(mod, tmp_path):
    service = install_service(tmp_path / "unapproved.db")
    import_payment(service, "k9", "PO-9999", 500)
    found = mod.overcharged_orders(service)
    assert found == {
        ("PO-9999", "USD"): {"payments": 1, "charged_cents": 500,
                             "approved_cents": 0}
    }, ("a payment with no approval at all was not reported with 0 approved"
        " (an inner join drops it: the payments must be joined LEFT to the"
        f" approvals); {found!r}")


def test_installments_within_the_approval_are_clean(mod, tmp_path):
    """Two payments for one order are no overcharge when together they stay
    within its approval: the grader sums cents, it does not count rows."""
    service = install_service(tmp_path / "installments.db")
    import_payment(service, "k1", ORDER, AMOUNT // 2)
    import_payment(service, "k2", ORDER, AMOUNT // 2)
    found = mod.overcharged_orders(service)
    assert found == {}, (
        "two installments within the approval were reported: the cents must be"
        f" summed, not the payments counted; {found!r}")
    import_payment(service, "k3", ORDER, 1)  # one cent too many
    found = mod.overcharged_orders(service)
    assert found == {
        (ORDER, CURRENCY): {"payments": 3, "charged_cents": AMOUNT + 1,
                            "approved_cents": AMOUNT}
    }, ("one cent beyond the approval was not reported, with its count and"
        f" cents: {found!r}")


def test_a_payment_in_another_currency_is_not_covered(mod, tmp_path):
    """4000 cents approved in USD allow nothing in EUR: a payment of 4000
    cents in EUR is 4000 cents nobody approved, and the USD payment beside it
    stays within its approval."""
    service = install_service(tmp_path / "currencies.db")
    import_payment(service, "k1", ORDER, AMOUNT, "USD")
    import_payment(service, "k2", ORDER, AMOUNT, "EUR")
    found = mod.overcharged_orders(service)
    assert found == {
        (ORDER, "EUR"): {"payments": 1, "charged_cents": AMOUNT,
                         "approved_cents": 0}
    }, ("the currency was ignored: a USD approval covers nothing in EUR, so"
        " payments must be grouped and matched by order AND currency;"
        f" {found!r}")


def test_an_approval_larger_than_the_payment_is_clean(mod, tmp_path):
    service = install_service(tmp_path / "larger.db", [(ORDER, 5000, CURRENCY)])
    import_payment(service, "k1", ORDER, AMOUNT)
    found = mod.overcharged_orders(service)
    assert found == {}, (
        "a payment smaller than its approval was reported as overcharged:"
        f" {found!r}")


APPROVALS = st.dictionaries(
    st.sampled_from(["PO-1", "PO-2", "PO-3"]),
    st.tuples(st.integers(1, 5000), st.sampled_from(["USD", "EUR"]),
              st.booleans()),  # amount, currency, revoked
)
PAYMENTS = st.lists(st.tuples(st.sampled_from(["PO-1", "PO-2", "PO-3", "PO-4"]),
                              st.integers(1, 5000),
                              st.sampled_from(["USD", "EUR"])), max_size=6)


def expected_from(approvals: dict, paid: list) -> dict:
    """The same question answered in Python, from the same rows."""
    totals: dict = {}
    for order, amount, currency in paid:
        n, cents = totals.get((order, currency), (0, 0))
        totals[order, currency] = (n + 1, cents + amount)
    found = {}
    for (order, currency), (n, cents) in totals.items():
        approved = 0
        if order in approvals and approvals[order][1] == currency:
            approved = approvals[order][0]
        if cents > approved:
            found[order, currency] = {"payments": n, "charged_cents": cents,
                                      "approved_cents": approved}
    return found


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(approvals=APPROVALS, paid=PAYMENTS)
def test_any_ledger(mod, tmp_path_factory, approvals, paid):
    """Approvals and payments drawn at random: several payments per order,
    two currencies, approvals larger or smaller than what was paid, revoked
    or not."""
    service = install_service(tmp_path_factory.mktemp("ledger") / "p.db", [])
    for order, (amount, currency, revoked) in approvals.items():
        payments.approve(service, order, amount, currency)
        if revoked:
            payments.revoke(service, order)
    for number, (order, amount, currency) in enumerate(paid):
        import_payment(service, f"k{number}", order, amount, currency)
    found, expected = mod.overcharged_orders(service), expected_from(approvals, paid)
    assert found == expected, (
        "on a random ledger the overcharged (order, currency) pairs differ from"
        f" the payments summed against their approvals: returned {found!r},"
        f" expected {expected!r}")
