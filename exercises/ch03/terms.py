"""Exercise 03.2 (the Extend): expiry and policy version, and the evidence."""


def why_refused(approval, action, now, policy):
    """The reason ``approval`` does not authorize ``action``, or None.

    ``approval``: None or a dict with ``amount_cents``, ``currency``, ``revoked``,
    ``expires_unix`` (wall-clock seconds or None) and ``policy_version``.
    ``action``: a dict with ``amount_cents`` and ``currency``. ``now``: seconds
    (``time.time()``); ``policy``: the service's current policy version.
    Check in this order: ``"not_approved"`` (no approval, or another amount or
    currency), ``"approval_revoked"``, ``"approval_expired"`` (now >= expiry),
    ``"policy_changed"`` (granted under another version).
    """
    raise NotImplementedError("exercise 03.2")


def explain(path, key):
    """What a committed payment was allowed under, read from the service.

    Return a dict with ``order_id``, ``amount_cents``, ``currency``,
    ``policy_version`` and ``expires_unix`` for ``key``, or None if no payment
    has that key. The answer must not change when the approval is later
    revoked, expired or outdated.
    """
    raise NotImplementedError("exercise 03.2")
