"""WRONG ANSWER to exercise 03.1 (chapter 03): the service's policy taken to be 1.

The mistake: the preview reads the approval from the file but not the
service's current policy; it assumes version 1, the one every file starts
with. It answers like the service until the owner moves the policy: then an
approval granted again under version 2 is previewed as ``policy_changed``
(and one still under version 1 as ``would_commit``). Caught by
``test_the_current_policy_is_read_from_the_file`` and
``test_a_new_payment_after_the_policy_moved_twice``.
"""


def preview(path, key, order_id, amount_cents, currency) -> str:
    """What ``payments.issue_payment`` would answer now, without charging."""
    action = {"order_id": order_id, "amount_cents": amount_cents,
              "currency": currency}
    with opened(path) as conn:
        conn.execute("BEGIN")  # a read transaction: one snapshot, no write lock
        try:
            recorded = payments.find_payment(conn, key)
            if recorded is not None:
                return "already_committed" if recorded == action else "conflict"
            approval = authority.read_approval(conn, order_id)
        finally:
            conn.execute("ROLLBACK")
    reason = authority.refusal_reason(approval, action, time.time(), 1)
    return f"refused: {reason}" if reason else "would_commit"
