"""Only the first reason. Caught by ``test_every_reason``."""

from crashcourse.services.payments import authority


def every_reason(approval, action, now, policy) -> tuple[str, ...]:
    reason = authority.refusal_reason(approval, action, now, policy)
    return (reason,) if reason else ()  # the service's reason, in a tuple
