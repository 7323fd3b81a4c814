"""WRONG ANSWER to exercise 03.2 (chapter 03): expiry tested by truthiness.

The mistake: ``expires and now >= expires`` stands in for "has an expiry and
it has passed", so an approval that expires at ``0.0`` (the epoch, a value the
column may hold) never expires, where the service refuses it. Caught by
``test_an_expiry_of_zero_is_an_expiry`` (any reader's clock after the epoch).
"""


def every_reason(approval, action, now, policy) -> tuple[str, ...]:
    """Every reason ``approval`` does not authorize ``action``, in order."""
    if approval is None or (approval["amount_cents"], approval["currency"]) != (
        action["amount_cents"], action["currency"]
    ):
        return ("not_approved",)
    expires = approval["expires_unix"]
    checks = (
        (bool(approval["revoked"]), "approval_revoked"),
        (bool(expires) and now >= expires, "approval_expired"),
        (approval["policy_version"] != policy, "policy_changed"),
    )
    return tuple(reason for failed, reason in checks if failed)
