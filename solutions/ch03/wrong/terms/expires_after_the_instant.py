"""WRONG ANSWER to exercise 03.2 (chapter 03): expiry compared with ``>``.

The mistake: an approval is taken to expire strictly after ``expires_unix``
(``now > expires``), so at the instant of expiry it still authorizes a new
payment, where the service already refuses it. Caught by the case of
``test_every_reason`` at the instant (and the same case of
``test_the_first_reason_is_the_one_the_service_gives``).
"""


def every_reason(approval, action, now, policy) -> tuple[str, ...]:
    """Every reason ``approval`` does not authorize ``action``, in order."""
    if approval is None or (approval["amount_cents"], approval["currency"]) != (
        action["amount_cents"], action["currency"]
    ):
        return ("not_approved",)  # the other terms belong to another action
    expires = approval["expires_unix"]
    checks = (
        (bool(approval["revoked"]), "approval_revoked"),
        (expires is not None and now > expires, "approval_expired"),
        (approval["policy_version"] != policy, "policy_changed"),
    )
    return tuple(reason for failed, reason in checks if failed)
