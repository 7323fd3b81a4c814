"""Grades exercise 03.2 (terms.py)."""

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse.services import payments
from crashcourse.services.payments import authority
from crashcourse.store import immediate, opened

ACTION = {"amount_cents": 4000, "currency": "USD"}


def approval(**changes):
    return {"amount_cents": 4000, "currency": "USD", "revoked": 0,
            "expires_unix": None, "policy_version": 1, **changes}


@pytest.fixture
def mod(sealed):
    """The answer, sealed: nothing under ``solutions/`` is read, and
    ``every_reason`` decides from its arguments alone (no process, no service
    file asked); ``explain`` reads the service's file it is given."""
    return sealed("ch03", "terms", "solutions", "experiment",
                  lifted={"explain": ("experiment",)})


CASES = [  # approval, now, policy: every reason, in the fixed order
    (approval(), 100.0, 1, ()),
    (None, 100.0, 1, ("not_approved",)),
    (approval(amount_cents=3000), 100.0, 1, ("not_approved",)),
    (approval(currency="EUR", revoked=1, expires_unix=50.0), 100.0, 2,
     ("not_approved",)),  # the terms of an approval for another action
    (approval(revoked=1), 100.0, 1, ("approval_revoked",)),
    (approval(expires_unix=100.0), 100.0, 1, ("approval_expired",)),  # the instant
    (approval(expires_unix=100.5), 100.0, 1, ()),
    (approval(expires_unix=101.0), 100.0, 2, ("policy_changed",)),  # only policy
    (approval(expires_unix=99.0), 100.0, 1, ("approval_expired",)),  # only expiry
    (approval(expires_unix=99.0), 100.0, 2, ("approval_expired", "policy_changed")),
    (approval(revoked=1, expires_unix=50.0, policy_version=2), 100.0, 1,
     ("approval_revoked", "approval_expired", "policy_changed")),
    (approval(revoked=1, policy_version=3), 100.0, 1,
     ("approval_revoked", "policy_changed")),
]
NAMES = ["authorized", "no-approval", "other-amount", "other-currency", "revoked",
         "expiry-at-the-instant", "half-a-second-left", "only-policy",
         "only-expiry", "expiry-and-policy", "all-three", "revoked-and-policy"]


@pytest.mark.parametrize(("grant", "now", "policy", "reasons"), CASES, ids=NAMES)
def test_every_reason(mod, grant, now, policy, reasons):
    found = mod.every_reason(grant, ACTION, now, policy)
    assert found == reasons, (
        f"every_reason gave {found}, not {reasons}: name every term the"
        " approval fails, each once, in the service's order")


@pytest.mark.parametrize(("grant", "now", "policy", "reasons"), CASES, ids=NAMES)
def test_the_first_reason_is_the_one_the_service_gives(mod, grant, now, policy,
                                                        reasons):
    found = mod.every_reason(grant, ACTION, now, policy)
    assert isinstance(found, tuple), (
        f"every_reason returned a {type(found).__name__}, not a tuple")
    service = authority.refusal_reason(grant, ACTION, now, policy)
    assert (found or (None,))[0] == service, (
        f"your first reason is {(found or (None,))[0]!r}, the service refuses"
        f" with {service!r}: list the reasons in the service's order")


def test_explain_survives_later_changes(mod, tmp_path):
    db = tmp_path / "payments.db"
    payments.install(db)
    expires = time.time() + 3600
    payments.approve(db, "PO-1", 4000, "USD", expires_unix=expires)
    payments.issue_payment(db, "k1", "PO-1", 4000, "USD")
    authority.set_policy_version(db, 2)
    payments.approve(db, "PO-1", 4000, "USD")  # re-granted under version 2
    payments.revoke(db, "PO-1")
    said = mod.explain(db, "k1")
    assert said == {"order_id": "PO-1", "amount_cents": 4000, "currency": "USD",
                    "policy_version": 1, "expires_unix": expires}, (
        f"explain gave {said}: the terms the payment was made under (policy 1,"
        " its expiry) come from its evidence row, not the approval as it is"
        " now (re-granted under policy 2, revoked)")
    said = mod.explain(db, "missing")
    assert said is None, f"a key that was never paid was explained as {said}"


def test_a_payment_without_evidence_is_still_a_payment(mod, tmp_path):
    """A payment row with no evidence beside it (imported from the previous
    system, or made before the service kept terms): explain says it was paid,
    with no terms, and None only for a key with no payment."""
    db = tmp_path / "payments.db"
    payments.install(db)
    with opened(db) as conn, immediate(conn):
        conn.execute("INSERT INTO payments (key, order_id, amount_cents, currency)"
                     " VALUES ('k0', 'PO-0', 2500, 'EUR')")
    said = mod.explain(db, "k0")
    assert said == {"order_id": "PO-0", "amount_cents": 2500, "currency": "EUR",
                    "policy_version": None, "expires_unix": None}, (
        f"a payment without evidence was explained as {said}: it was paid"
        " (its row), with no terms (None), not 'no payment'")
    said = mod.explain(db, "k1")
    assert said is None, f"a key that was never paid was explained as {said}"


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(amount=st.sampled_from([3000, 4000, 5000]),
       currency=st.sampled_from(["USD", "EUR"]), revoked=st.sampled_from([0, 1]),
       skew=st.one_of(st.none(), st.sampled_from([-1.0, -1e-6, 0.0, 1e-6, 1.0])),
       granted=st.integers(1, 3), policy=st.integers(1, 3),
       now=st.floats(0, 2e9, allow_nan=False))
def test_any_approval_at_any_instant(mod, amount, currency, revoked, skew,
                                     granted, policy, now):
    """Approvals larger, smaller or equal to the payment, in either currency;
    expiries a second, a microsecond or no time at all before or after the
    reader's clock (``now``): every reason, each one alone, in order."""
    grant = approval(amount_cents=amount, currency=currency, revoked=revoked,
                     expires_unix=None if skew is None else now + skew,
                     policy_version=granted)
    found = mod.every_reason(grant, ACTION, now, policy)
    if (amount, currency) != (ACTION["amount_cents"], ACTION["currency"]):
        assert found == ("not_approved",), (
            f"an approval for {amount} {currency} against a payment of"
            f" {ACTION['amount_cents']} {ACTION['currency']} gave {found}: another"
            " amount or currency is not this payment's approval at all")
        return
    expected = tuple(reason for failed, reason in (
        (revoked == 1, "approval_revoked"),
        (skew is not None and skew <= 0, "approval_expired"),
        (granted != policy, "policy_changed")) if failed)
    assert found == expected, (
        f"revoked={revoked}, expiry {skew} s from now, granted under policy"
        f" {granted} with policy {policy}: every_reason gave {found}, not"
        f" {expected} (an approval expired at the instant it ends)")
    service = authority.refusal_reason(grant, ACTION, now, policy)
    assert (found or (None,))[0] == service, (
        f"your first reason is {(found or (None,))[0]!r}, the service refuses"
        f" with {service!r}: list the reasons in the service's order")


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(now=st.floats(1e-6, 2e9, allow_nan=False), policy=st.integers(1, 3))
def test_an_expiry_of_zero_is_an_expiry(mod, now, policy):
    """``expires_unix`` of 0.0 is an instant (the epoch), not "no expiry":
    only ``None`` means the approval never runs out. An answer that tests the
    expiry by truthiness lets an approval that ran out at the epoch pay."""
    grant = approval(expires_unix=0.0, policy_version=policy)
    service = authority.refusal_reason(grant, ACTION, now, policy)
    assert service == "approval_expired", (
        f"the service itself gave {service!r} (the grader's world)")
    found = mod.every_reason(grant, ACTION, now, policy)
    assert found == ("approval_expired",), (
        f"an approval that expired at the epoch (0.0) gave {found}: 0.0 is an"
        " instant, only None means no expiry (test 'is None', not truthiness)")
