"""WRONG ANSWER to exercise 03.1 (chapter 03): authority asked before history.

The mistake: "no approval, no payment" comes first, so the approval is
checked before the key is looked up. Whenever nothing was revoked it answers
like the service; after a revocation it previews "refused" for a payment
that already happened, and a workflow that trusts the screen records a paid
invoice as unpaid. Caught by ``test_revoke_after_payment_is_history``.
"""


def preview(path, key, order_id, amount_cents, currency) -> str:
    """What ``payments.issue_payment`` would answer now, without charging."""
    action = {"order_id": order_id, "amount_cents": amount_cents,
              "currency": currency}
    with opened(path) as conn:
        conn.execute("BEGIN")  # a read transaction: one snapshot, no write lock
        try:
            approval = authority.read_approval(conn, order_id)  # no approval,
            policy = authority.current_policy(conn)  # no payment: ask it first
            reason = authority.refusal_reason(approval, action, time.time(), policy)
            if reason:
                return f"refused: {reason}"
            recorded = payments.find_payment(conn, key)
            if recorded is not None:
                return "already_committed" if recorded == action else "conflict"
        finally:
            conn.execute("ROLLBACK")  # nothing was written: nothing to keep
    return "would_commit"
