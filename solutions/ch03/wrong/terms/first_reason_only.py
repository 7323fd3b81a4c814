"""WRONG ANSWER to exercise 03.2 (chapter 03): only the first reason.

The mistake: ``every_reason`` wraps the runtime's ``refusal_reason``, which
stops at the first failed check. An approval that is revoked, expired and
outdated is reported as merely revoked; the owner restores it and is refused
again, for the expiry, then for the policy. Caught by the cases of
``test_every_reason`` with two or three reasons.
"""

from crashcourse import authority
from crashcourse.store import opened


def every_reason(approval, action, now, policy) -> tuple[str, ...]:
    """Every reason ``approval`` does not authorize ``action``, in order."""
    reason = authority.refusal_reason(approval, action, now, policy)
    return (reason,) if reason else ()  # the service's reason, in a tuple


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
