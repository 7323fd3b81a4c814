"""WRONG ANSWER to exercise 03.2 (chapter 03): the payment explained by today's terms.

The mistake: ``explain`` joins the payment with the CURRENT ``approval_terms``
of its order instead of the ``payment_evidence`` written in the payment's own
transaction. It answers correctly until the approval is granted again under
a new policy; then an old payment appears to have been made under a policy
that did not exist when it was made. Caught by
``test_explain_survives_later_changes``.
"""


EVIDENCE = (  # the approval's terms as they are now
    "SELECT p.order_id, p.amount_cents, p.currency,"
    "       t.policy_version, t.expires_unix"
    " FROM payments AS p JOIN approval_terms AS t USING (order_id)"
    " WHERE p.key = :key")
