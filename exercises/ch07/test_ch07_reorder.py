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
    actions = [s.action for s in ordered]
    assert actions == ["rename", "rename", "check_names", "check_totals",
                       "pay_invoice", "send_mail", "send_mail"], (
        f"the steps come out as {actions}: reversible work first, then the"
        " gates, then the irreversible steps, each group in the plan's order")
    files = [s.args.get("file_id") for s in ordered[:2]]
    assert files == ["f001", "f002"], (
        f"the renames come out for {files}: inside a group keep the plan's own"
        " order, do not sort")
    to = [s.args.get("to") for s in ordered[5:]]
    assert to == ["owner@shop.example", "orders@supplier.example"], (
        f"the mails come out to {to}: inside a group keep the plan's own order")
    numbers = [s.number for s in ordered]
    assert numbers == [1, 2, 3, 4, 5, 6, 7], (
        f"the steps are numbered {numbers}: renumber them 1..7 in the new order")
    flags = [(s.irreversible, s.gate) for s in ordered]
    assert flags == [(False, False), (False, False), (False, True), (False, True),
                     (True, False), (True, False), (True, False)], (
        f"the (irreversible, gate) flags came out as {flags}: a step keeps its"
        " own flags when it moves")


def test_mail_possibly_sent_follows_the_last_row(answer):
    mod = answer("ch07", "reorder")
    ordered = mod.reorder(RAW)
    # rows 1-4: renames and gates; 5: the payment, irreversible but no mail
    said = [mod.mail_possibly_sent(ordered, row) for row in range(8)]
    assert said == [False, False, False, False, False, False, True, True], (
        f"for the journal's last row 0..7 of the ordered plan you answered {said}:"
        " a mail may have gone out once the last row reaches the first mail"
        " (row 6); the payment at row 5 is irreversible but no mail")
    said = mod.mail_possibly_sent(RAW, 1)
    assert said is False, (  # the unsorted plan: a payment
        f"in the unsorted plan, row 1 (a payment) answered {said!r}: read the"
        " plan you are given, not the ordered one")
    said = mod.mail_possibly_sent(RAW, 2)
    assert said is True, (  # ... then a mail
        f"in the unsorted plan, row 2 (a mail) answered {said!r}: read the plan"
        " you are given, not the ordered one")


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
    got = [(s.action, s.args, s.irreversible, s.gate) for s in ordered]
    assert got == [(s.action, s.args, s.irreversible, s.gate) for s in expected], (
        f"the plan {[s.action for s in steps]} came out as"
        f" {[s.action for s in ordered]}: reversible, then gates, then"
        " irreversible, each group in the plan's own order")
    numbers = [s.number for s in ordered]
    assert numbers == list(range(1, len(steps) + 1)), (
        f"the steps are numbered {numbers}: renumber them 1..{len(steps)}")
    for plan_ in (steps, ordered):
        mails = [s.number for s in plan_ if s.action == "send_mail"]
        said = [mod.mail_possibly_sent(plan_, row) for row in range(len(steps) + 1)]
        truth = [any(m <= row for m in mails) for row in range(len(steps) + 1)]
        assert said == truth, (
            f"for the plan {[s.action for s in plan_]} you answered {said} per"
            f" last row, not {truth}: a mail may have gone out exactly when one"
            " is numbered at or before the last row")
