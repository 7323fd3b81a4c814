"""WRONG ANSWER to exercise 04.2 (chapter 04): the caller's lock committed away.

The mistake: ``room_for`` ends the caller's ``BEGIN IMMEDIATE`` (a ``commit``
to "start clean"), counts the round outside any lock and opens a plain
``BEGIN`` again so the caller's commit still works; another writer can
pay between this count and the caller's insert: the very race the budget check
exists to close (chapter 04's own mutant). The counts are right; only the lock
is gone. Caught by ``test_the_callers_transaction_and_lock_survive``.
"""


def room_for(conn, amount_cents: int, currency: str, round_start: float):
    """Why one more payment does not fit this round, or None."""
    conn.commit()  # "start from a clean transaction": drops the write lock
    policy = conn.execute("SELECT max_actions FROM budget_policy WHERE id = 1")
    policy = policy.fetchone()
    used = conn.execute(THIS_ROUND, {"currency": currency,
                                     "round_start": round_start}).fetchone()
    cap = conn.execute(
        "SELECT cap_cents FROM budget_caps WHERE currency = :currency",
        {"currency": currency},
    ).fetchone()
    conn.execute("BEGIN")  # so the caller's COMMIT still finds a transaction
    if policy is None:
        return None
    if used[0] + 1 > policy[0]:
        return "budget_action_limit"
    if cap is None or used[1] + amount_cents > cap[0]:
        return "budget_currency_cap"
    return None
