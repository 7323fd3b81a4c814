"""Solution 03.2: every term that refuses, and the evidence (chapter 03).

See EXPLANATION.md.
"""

from crashcourse.store import opened


def every_reason(approval, action, now, policy) -> tuple[str, ...]:
    """Every reason ``approval`` does not authorize ``action``, in order."""
    if approval is None or (approval["amount_cents"], approval["currency"]) != (
        action["amount_cents"], action["currency"]
    ):
        return ("not_approved",)  # the other terms belong to another action
    expires = approval["expires_unix"]
    checks = (
        (bool(approval["revoked"]), "approval_revoked"),
        (expired(expires, now), "approval_expired"),
        (approval["policy_version"] != policy, "policy_changed"),
    )
    return tuple(reason for failed, reason in checks if failed)


def expired(expires, now) -> bool:
    """An expiry that is set and has come: at the instant itself, expired."""
    return expires is not None and now >= expires


# What a committed payment was allowed under: the evidence kept at commit
# time (LEFT: a payment with no evidence row is still a payment).
EVIDENCE = (
    "SELECT p.order_id, p.amount_cents, p.currency,"
    "       e.policy_version, e.expires_unix"
    " FROM payments AS p"
    " LEFT JOIN payment_evidence AS e USING (key)"
    " WHERE p.key = :key")


def explain(path, key):
    """What a committed payment was allowed under, read from the service."""
    with opened(path) as conn:
        row = conn.execute(EVIDENCE, {"key": key}).fetchone()
    return dict(row) if row else None
