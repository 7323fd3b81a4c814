"""Exercise 04.2: the allowance per round, derived from committed payments.

The chapter's budget counts every payment the service ever committed. The
shop owner hands the allowance out per restock round instead: "one payment,
at most 4000 cents, in this round". A round starts at a wall-clock instant,
and the payments of earlier rounds no longer count. Still nothing is counted
anywhere: the check reads the committed rows, and each payment's
``payment_evidence`` row (chapter 03) says when it committed.
"""


def room_for(conn, amount_cents: int, currency: str, round_start: float):
    """Why one more payment of ``amount_cents`` in ``currency`` does not fit
    the round that began at ``round_start`` (``time.time()`` seconds).

    ``conn`` is open on the payment service's file, inside the payment's
    ``BEGIN IMMEDIATE`` transaction (the caller holds the write lock). Read the
    policy from ``budget_policy`` (``max_actions``, one row with ``id = 1``)
    and ``budget_caps`` (``currency``, ``cap_cents``); it applies to each round.
    A committed ``payments`` row belongs to this round when its
    ``payment_evidence`` row has ``committed_unix >= round_start``. A payment
    with no evidence row (imported from the shop's previous system) counts in
    every round: nothing shows that it belongs to an earlier one. Return:

    * None when no policy is stored, or when the payment fits;
    * ``"budget_action_limit"`` when this round's payments are already at the
      max;
    * ``"budget_currency_cap"`` when the currency has no cap, or this round's
      cents in it plus ``amount_cents`` exceed its cap (zero is a cap).
    """
    raise NotImplementedError("exercise 04.2")
