"""Exercise 03.2: every term that refuses, and the evidence (chapter 03).

The service refuses a new payment with ONE reason, the first in
``authority.refusal_reason``'s fixed order. The owner, about to fix an
approval, needs all of them: an approval that is revoked AND expired AND
granted under an old policy needs three repairs, and hearing of one at a
time means three rounds of "refused".
"""


def every_reason(approval, action, now, policy) -> tuple[str, ...]:
    """Every reason ``approval`` does not authorize ``action``, in the fixed
    order; ``()`` when it does.

    ``approval``: None or a dict with ``amount_cents``, ``currency``, ``revoked``,
    ``expires_unix`` (wall-clock seconds or None) and ``policy_version``.
    ``action``: a dict with ``amount_cents`` and ``currency``. ``now``: seconds
    (``time.time()``); ``policy``: the service's current policy version.

    * ``("not_approved",)`` alone when there is no approval for this action
      (none at all, or one for another amount or currency): the terms of an
      approval for something else say nothing about this payment.
    * Otherwise, in this order, each that applies: ``"approval_revoked"``,
      ``"approval_expired"`` (now >= expiry), ``"policy_changed"`` (granted
      under another version).

    The first reason is always the one the service refuses with.
    """
    raise NotImplementedError("exercise 03.2")


def explain(path, key):
    """What a committed payment was allowed under, read from the service.

    Return a dict with ``order_id``, ``amount_cents``, ``currency``,
    ``policy_version`` and ``expires_unix`` for ``key``, or None if no payment
    has that key. The answer must not change when the approval is later
    revoked, expired or outdated. A payment whose terms were never kept (made
    before the service kept evidence, or imported) is still a payment: its
    dict, with ``policy_version`` and ``expires_unix`` None.
    """
    raise NotImplementedError("exercise 03.2")
