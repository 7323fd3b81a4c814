"""WRONG ANSWER to exercise 03.1 (chapter 03): history and authority read from
two snapshots.

The mistake: the order is right (history first, then authority) but each
question opens its own connection, so each reads its own snapshot of the
file. When a payment and a change of authority commit together between the
two reads, the preview answers for no state the file was ever in: history
from before, authority from after (a key "refused: approval_revoked" that the
file, before or after, says would commit or is a conflict). Caught by
``test_history_and_authority_come_from_one_snapshot``.
"""


def preview(path, key, order_id, amount_cents, currency) -> str:
    """What ``payments.issue_payment`` would answer now, without charging."""
    action = {"order_id": order_id, "amount_cents": amount_cents,
              "currency": currency}
    with opened(path) as conn:  # history ...
        recorded = payments.find_payment(conn, key)
    if recorded is not None:
        return "already_committed" if recorded == action else "conflict"
    with opened(path) as conn:  # ... and authority, a moment later
        approval = authority.read_approval(conn, order_id)
        policy = authority.current_policy(conn)
    reason = authority.refusal_reason(approval, action, time.time(), policy)
    return f"refused: {reason}" if reason else "would_commit"
