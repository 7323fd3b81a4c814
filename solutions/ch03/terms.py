"""Exercise 03.2 (the Extend): expiry and policy version, and the evidence."""

from crashcourse.store import opened


def why_refused(approval, action, now, policy):
    """The reason ``approval`` does not authorize ``action``, or None."""
    if approval is None or (approval["amount_cents"], approval["currency"]) != (
        action["amount_cents"], action["currency"]
    ):
        return "not_approved"
    if approval["revoked"]:
        return "approval_revoked"
    expires = approval["expires_unix"]
    if expires is not None and now >= expires:
        return "approval_expired"
    if approval["policy_version"] != policy:
        return "policy_changed"
    return None


def explain(path, key):
    """What a committed payment was allowed under, read from the service."""
    with opened(path) as conn:
        row = conn.execute(
            "SELECT p.order_id, p.amount_cents, p.currency,"
            "       e.policy_version, e.expires_unix"
            " FROM payments AS p"
            " JOIN payment_evidence AS e USING (key)"  # kept at commit time
            " WHERE p.key = :key",
            {"key": key},
        ).fetchone()
    return dict(row) if row else None
