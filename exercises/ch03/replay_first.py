"""Exercise 03.1 (Kata 12): historical replay before new authorization."""

from crashcourse.services import payments  # noqa: F401  (its building blocks)
from crashcourse.store import immediate, opened  # noqa: F401


def issue_checked(path, key, order_id, amount_cents, currency) -> str:
    """Charge once per key, asking history before authority.

    ``path`` is the payment service's file. In ONE ``immediate`` transaction
    on ``opened(path)``:

    * the key already names a payment for exactly this action: return
      ``"already_committed"`` (no approval needed, none restored);
    * the key names a payment for another order, amount or currency: raise
      ``payments.PaymentConflict(key, recorded, offered)``;
    * otherwise this is a NEW payment: ``payments.require_approval`` must pass
      (it raises ``ApprovalRefused``), then ``payments.record_payment`` with the
      terms it returned; return ``"committed"``.
    """
    raise NotImplementedError("exercise 03.1")
