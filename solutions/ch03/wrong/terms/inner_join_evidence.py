"""WRONG ANSWER to exercise 03.2 (chapter 03): the evidence joined with a plain
JOIN.

The mistake: ``explain`` joins ``payments`` with ``payment_evidence`` by an
inner ``JOIN``, so a payment with no evidence row (imported, or made before
the service kept terms; chapter 04 meets such rows) drops out of the query,
and ``explain`` answers None, which says "no payment has this key", for a
payment that was made. Caught by
``test_a_payment_without_evidence_is_still_a_payment``.
"""


EVIDENCE = (
    "SELECT p.order_id, p.amount_cents, p.currency,"
    "       e.policy_version, e.expires_unix"
    " FROM payments AS p JOIN payment_evidence AS e USING (key)"  # inner
    " WHERE p.key = :key")
