"""The payment explained by today's terms. Caught by
``test_explain_survives_later_changes``."""


EVIDENCE = (  # the approval's terms as they are now
    "SELECT p.order_id, p.amount_cents, p.currency,"
    "       t.policy_version, t.expires_unix"
    " FROM payments AS p JOIN approval_terms AS t USING (order_id)"
    " WHERE p.key = :key")
