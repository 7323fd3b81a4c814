"""Solution 04.2: the allowance per round, derived from committed payments.

See EXPLANATION.md.
"""

THIS_ROUND = """
SELECT count(*) AS payments,
       coalesce(sum(CASE WHEN p.currency = :currency
                         THEN p.amount_cents END), 0) AS cents
  FROM payments AS p
  LEFT JOIN payment_evidence AS e USING (key)  -- no evidence: it still counts
 WHERE e.committed_unix IS NULL OR e.committed_unix >= :round_start
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
    if over_cap(cap, used[1] + amount_cents):
        return "budget_currency_cap"
    return None


def over_cap(cap, total_cents: int) -> bool:
    """A currency with no cap takes no payment; one with a cap, up to it."""
    return cap is None or total_cents > cap[0]
