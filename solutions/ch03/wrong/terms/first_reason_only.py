"""WRONG ANSWER to exercise 03.2 (chapter 03): only the first reason.

The mistake: ``every_reason`` wraps the runtime's ``refusal_reason``, which
stops at the first failed check. An approval that is revoked, expired and
outdated is reported as merely revoked; the owner restores it and is refused
again, for the expiry, then for the policy. Caught by the cases of
``test_every_reason`` with two or three reasons.
"""


from crashcourse.services.payments import authority


def every_reason(approval, action, now, policy) -> tuple[str, ...]:
    """Every reason ``approval`` does not authorize ``action``, in order."""
    reason = authority.refusal_reason(approval, action, now, policy)
    return (reason,) if reason else ()  # the service's reason, in a tuple
