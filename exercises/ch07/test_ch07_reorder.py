"""Grades exercise 07.2: reversible first, gates next, irreversible last."""

from crashcourse.plan import Step

RAW = [
    Step(1, "send_mail", {"to": "owner@shop.example"}, irreversible=True),
    Step(2, "rename", {"file_id": "f001"}),
    Step(3, "check_names", {}, gate=True),
    Step(4, "send_mail", {"to": "orders@supplier.example"}, irreversible=True),
    Step(5, "rename", {"file_id": "f002"}),
    Step(6, "check_totals", {}, gate=True),
]


def test_reorder_groups_keeps_order_and_renumbers(answer):
    ordered = answer("ch07", "reorder").reorder(RAW)
    assert [s.action for s in ordered] == ["rename", "rename", "check_names",
                                           "check_totals", "send_mail", "send_mail"]
    assert [s.args.get("file_id") for s in ordered[:2]] == ["f001", "f002"]
    assert [s.args.get("to") for s in ordered[4:]] == ["owner@shop.example",
                                                       "orders@supplier.example"]
    assert [s.number for s in ordered] == [1, 2, 3, 4, 5, 6]


def test_mail_possibly_sent_follows_the_last_row(answer):
    mod = answer("ch07", "reorder")
    ordered = mod.reorder(RAW)
    assert [mod.mail_possibly_sent(ordered, row) for row in range(7)] == [
        False, False, False, False, False, True, True]
    assert mod.mail_possibly_sent(RAW, 1) is True  # the unsorted plan
