""""no approval, no payment" first: after a revocation the preview says "refused" for a
payment that already happened. Caught by ``test_revoke_after_payment_is_history``."""


def preview(path, key, order_id, amount_cents, currency, _reference=preview):  # noqa: F821
    action = {"order_id": order_id, "amount_cents": amount_cents,
              "currency": currency}
    with opened(path) as conn, snapshot(conn):  # no approval, no payment
        approval = authority.read_approval(conn, order_id)
        policy = authority.current_policy(conn)
    said = judged(approval, action, policy)
    return said if said != "would_commit" else _reference(
        path, key, order_id, amount_cents, currency)
