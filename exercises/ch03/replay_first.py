"""Exercise 03.1: history before authority, as a preview (chapter 03).

The shop owner's screen lists the payment requests waiting to be retried,
and beside each one what the payment service WOULD answer if it were asked
now. Asking it is not an option: ``issue_payment`` charges. So the preview
answers from the service's file the way the service would, in the service's
order: history first, then authority.
"""

from crashcourse.services.payments import authority
from crashcourse.services import payments  # noqa: F401  (its building blocks)
from crashcourse.store import opened  # noqa: F401


def preview(path, key, order_id, amount_cents, currency) -> str:
    """What ``payments.issue_payment`` would answer now, without charging.

    ``path`` is the payment service's file (it stores no budget; chapter 04
    adds one). Return:

    * ``"already_committed"``: the key names a payment for exactly this
      action (no approval needed, whatever happened to it since);
    * ``"conflict"``: the key names a payment for another order, amount or
      currency;
    * ``"refused: REASON"``: a NEW payment the current approval does not
      authorize; REASON is what ``ApprovalRefused.reason`` would say;
    * ``"would_commit"``: a new payment the service would make now.

    Read only: write nothing, and take no write lock. A payment may be in
    progress at that moment; ``store.immediate`` would wait for it (and make
    the next one wait). A plain ``BEGIN`` opens a read transaction: one
    snapshot of the file, no write lock.
    """
    raise NotImplementedError("exercise 03.1: history first, then authority")
