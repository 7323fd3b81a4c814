"""WRONG ANSWER to exercise 04.2 (chapter 04): a currency without a cap has no limit.

The mistake: a missing row in ``budget_caps`` is read as "no limit in this
currency" instead of "no allowance in this currency". That is the uncapped
path the budget exists to close: any payment in a currency the owner never
thought of goes through. Caught by ``test_currency_caps[uncapped-currency]``.
"""


def room_for(conn, amount_cents: int, currency: str, round_start: float):
    """Why one more payment does not fit this round, or None."""
    policy = conn.execute("SELECT max_actions FROM budget_policy WHERE id = 1")
    policy = policy.fetchone()
    if policy is None:
        return None
    used = conn.execute(THIS_ROUND, {"currency": currency,
                                     "round_start": round_start}).fetchone()
    if used[0] + 1 > policy[0]:
        return "budget_action_limit"
    cap = conn.execute(
        "SELECT cap_cents FROM budget_caps WHERE currency = :currency",
        {"currency": currency},
    ).fetchone()
    if cap is not None and used[1] + amount_cents > cap[0]:
        return "budget_currency_cap"
    return None
