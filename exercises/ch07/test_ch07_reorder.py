"""Grades exercise 07.2: reversible first, gates next, irreversible last."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse.journal import plan
from crashcourse.journal.plan import Step

RAW = [
    Step(1, "pay_invoice", {"order": "PO-1001"}, irreversible=True),
    Step(2, "send_mail", {"to": "owner@shop.example"}, irreversible=True),
    Step(3, "rename", {"file_id": "f001"}),
    Step(4, "check_names", {}, gate=True),
    Step(5, "send_mail", {"to": "orders@supplier.example"}, irreversible=True),
    Step(6, "rename", {"file_id": "f002"}),
    Step(7, "check_totals", {}, gate=True),
]


@pytest.fixture(autouse=True)
def order_plan_is_off_limits(monkeypatch):
    """The exercise is to write the ordering: the runtime's is unplugged."""

    def off_limits(*args, **kwargs):
        raise AssertionError("write the ordering yourself: order_plan is unplugged")

    monkeypatch.setattr(plan, "order_plan", off_limits)


def test_reorder_groups_keeps_order_and_renumbers(answer):
    ordered = answer("ch07", "reorder").reorder(RAW)
    assert [s.action for s in ordered] == [
        "rename", "rename", "check_names", "check_totals",
        "pay_invoice", "send_mail", "send_mail"]
    assert [s.args.get("file_id") for s in ordered[:2]] == ["f001", "f002"]
    assert [s.args.get("to") for s in ordered[5:]] == ["owner@shop.example",
                                                       "orders@supplier.example"]
    assert [s.number for s in ordered] == [1, 2, 3, 4, 5, 6, 7]
    assert [(s.irreversible, s.gate) for s in ordered] == [
        (False, False), (False, False), (False, True), (False, True),
        (True, False), (True, False), (True, False)]


def test_mail_possibly_sent_follows_the_last_row(answer):
    mod = answer("ch07", "reorder")
    ordered = mod.reorder(RAW)
    # rows 1-4: renames and gates; 5: the payment, irreversible but no mail
    assert [mod.mail_possibly_sent(ordered, row) for row in range(8)] == [
        False, False, False, False, False, False, True, True]
    assert mod.mail_possibly_sent(RAW, 1) is False  # the unsorted plan: a payment
    assert mod.mail_possibly_sent(RAW, 2) is True  # ... then a mail


# Steps of every kind, named so that no group is in alphabetical order by
# chance: reversible work, gates, irreversible steps that are mails and
# irreversible steps that are not.
KINDS = {
    "reversible": ("rename", "archive", "tag", "copy"),
    "gate": ("check_totals", "check_names", "verify", "check_stock"),
    "irreversible": ("send_mail", "pay_invoice", "post_letter", "send_mail"),
}
DRAWN_STEPS = st.lists(
    st.tuples(st.sampled_from(sorted(KINDS)), st.integers(0, 3)), min_size=1,
    max_size=12)


def build(drawn) -> list:
    return [Step(n, KINDS[kind][pick], {"id": f"s{n}"},
                 irreversible=kind == "irreversible", gate=kind == "gate")
            for n, (kind, pick) in enumerate(drawn, start=1)]


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=DRAWN_STEPS)
def test_drawn_plans_are_grouped_in_their_own_order(answer, drawn):
    """Any plan: the three groups, each in the plan's own order (the args say
    which step is which), renumbered; and a mail may have gone out exactly
    when some mail is numbered at or before the journal's last row."""
    mod = answer("ch07", "reorder")
    steps = build(drawn)
    ordered = mod.reorder(steps)
    expected = ([s for s in steps if not s.gate and not s.irreversible]
                + [s for s in steps if s.gate] + [s for s in steps if s.irreversible])
    assert [(s.action, s.args, s.irreversible, s.gate) for s in ordered] == [
        (s.action, s.args, s.irreversible, s.gate) for s in expected]
    assert [s.number for s in ordered] == list(range(1, len(steps) + 1))
    for plan_ in (steps, ordered):
        mails = [s.number for s in plan_ if s.action == "send_mail"]
        assert [mod.mail_possibly_sent(plan_, row)
                for row in range(len(steps) + 1)] == [
            any(m <= row for m in mails) for row in range(len(steps) + 1)]
