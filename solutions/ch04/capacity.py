"""Exercise 04.2: the allowance check, derived from committed payments."""


def room_for(conn, amount_cents: int, currency: str):
    """Why one more payment of ``amount_cents`` in ``currency`` does not fit."""
    policy = conn.execute("SELECT max_actions FROM budget_policy WHERE id = 1")
    policy = policy.fetchone()
    if policy is None:
        return None
    paid = conn.execute("SELECT count(*) FROM payments").fetchone()[0]
    if paid + 1 > policy[0]:
        return "budget_action_limit"
    cap = conn.execute(
        "SELECT cap_cents FROM budget_caps WHERE currency = :currency",
        {"currency": currency},
    ).fetchone()
    spent = conn.execute(
        "SELECT coalesce(sum(amount_cents), 0) FROM payments"
        " WHERE currency = :currency",
        {"currency": currency},
    ).fetchone()[0]
    if cap is None or spent + amount_cents > cap[0]:
        return "budget_currency_cap"
    return None
