"""Exercise 04.2: the allowance check, derived from committed payments."""


def room_for(conn, amount_cents: int, currency: str):
    """Why one more payment of ``amount_cents`` in ``currency`` does not fit.

    ``conn`` is open on the payment service's file, inside the payment's
    ``BEGIN IMMEDIATE`` transaction (the caller holds the write lock). Read the
    policy from ``budget_policy`` (``max_actions``, one row with ``id = 1``)
    and ``budget_caps`` (``currency``, ``cap_cents``), and count the committed
    ``payments`` rows. Return:

    * None when no policy is stored, or when the payment fits;
    * ``"budget_action_limit"`` when the payment count is already at the max;
    * ``"budget_currency_cap"`` when the currency has no cap, or the cents
      already paid in it plus ``amount_cents`` exceed its cap (zero is a cap).
    """
    raise NotImplementedError("exercise 04.2")
