"""WRONG ANSWER to exercise 04.2 (chapter 04): only payments with evidence count.

The mistake: payments are joined to ``payment_evidence`` with a plain
``JOIN``, so a payment that has no evidence row (imported from the shop's
previous system) belongs to no round at all and gives its unit back. A row
nobody can date must count, not vanish. Caught by
``test_which_payments_belong_to_the_round[no-evidence]``.
"""


THIS_ROUND = """
SELECT count(*) AS payments,
       coalesce(sum(CASE WHEN p.currency = :currency
                         THEN p.amount_cents END), 0) AS cents
  FROM payments AS p
  JOIN payment_evidence AS e USING (key)
 WHERE e.committed_unix >= :round_start
"""
