"""History and authority read from two snapshots. Caught by
``test_history_and_authority_come_from_one_snapshot``."""


def preview(path, key, order_id, amount_cents, currency) -> str:
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
