"""Only payments with evidence count. Caught by
``test_which_payments_belong_to_the_round[no-evidence]``."""


THIS_ROUND = """
SELECT count(*) AS payments,
       coalesce(sum(CASE WHEN p.currency = :currency
                         THEN p.amount_cents END), 0) AS cents
  FROM payments AS p
  JOIN payment_evidence AS e USING (key)
 WHERE e.committed_unix >= :round_start
"""
