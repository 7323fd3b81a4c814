"""WRONG ANSWER to exercise 03.1 (chapter 03): a known key is taken as a replay.

The mistake: history is asked first, as it should be, but only whether the
key exists, not what it was used for. A key bound to 4000 USD for PO-3001 is
previewed as "already_committed" for 4100 USD, for EUR or for another order,
where the service refuses it as a conflict: the screen reports as paid an
action that never happened. Caught by ``test_a_key_cannot_be_repurposed``.
"""


def preview(path, key, order_id, amount_cents, currency) -> str:
    """What ``payments.issue_payment`` would answer now, without charging."""
    action = {"order_id": order_id, "amount_cents": amount_cents,
              "currency": currency}
    with opened(path) as conn:
        conn.execute("BEGIN")  # a read transaction: one snapshot, no write lock
        try:
            recorded = payments.find_payment(conn, key)
            if recorded is not None:  # history: no new effect, no authority needed
                return "already_committed"  # the key is known: it was paid
            approval = authority.read_approval(conn, order_id)  # a new effect
            policy = authority.current_policy(conn)
        finally:
            conn.execute("ROLLBACK")  # nothing was written: nothing to keep
    reason = authority.refusal_reason(approval, action, time.time(), policy)
    return f"refused: {reason}" if reason else "would_commit"
