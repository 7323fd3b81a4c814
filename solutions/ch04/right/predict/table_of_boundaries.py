"""A correct answer that looks like gaming: the prediction as a table, one
literal row per kill point, no reasoning in code. The question has three
kill points and a prediction is an answer per point, so a table is a fair
way to write it; an unknown point is still refused."""


def predict(boundary: str) -> dict:
    nothing_committed = {"payments_at_kill": 0, "worker_b": "committed",
                         "a_replacement": "budget_action_limit",
                         "paid_keys": ["pay-b"]}
    table = {"before_payment": nothing_committed,
             "payment_inserted": nothing_committed,
             "after_payment": {"payments_at_kill": 1,
                               "worker_b": "budget_action_limit",
                               "a_replacement": "already_committed",
                               "paid_keys": ["pay-a"]}}
    if boundary not in table:
        raise ValueError(f"unknown boundary {boundary!r}")
    return dict(table[boundary])
