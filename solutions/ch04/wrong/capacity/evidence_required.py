"""WRONG ANSWER to exercise 04.2 (chapter 04): only payments with evidence count.

The mistake: payments are joined to ``payment_evidence`` with a plain
``JOIN``, so a payment that has no evidence row (imported from the shop's
previous system) belongs to no round at all and gives its unit back. A row
nobody can date must count, not vanish. Caught by
``test_which_payments_belong_to_the_round[no-evidence]``.
"""

THIS_ROUND = """
SELECT count(*) AS payments,
       coalesce(sum(CASE WHEN p.currency = :currency
                         THEN p.amount_cents END), 0) AS cents
  FROM payments AS p
  JOIN payment_evidence AS e USING (key)
 WHERE e.committed_unix >= :round_start
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
    if cap is None or used[1] + amount_cents > cap[0]:
        return "budget_currency_cap"
    return None
