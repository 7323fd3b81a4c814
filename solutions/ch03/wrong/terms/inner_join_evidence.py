"""The evidence joined with a plain JOIN. Caught by
``test_a_payment_without_evidence_is_still_a_payment``."""


EVIDENCE = (
    "SELECT p.order_id, p.amount_cents, p.currency,"
    "       e.policy_version, e.expires_unix"
    " FROM payments AS p JOIN payment_evidence AS e USING (key)"  # inner
    " WHERE p.key = :key")
