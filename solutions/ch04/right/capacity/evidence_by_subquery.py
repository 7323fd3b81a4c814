"""A correct answer in other SQL: a payment belongs to this round unless its
evidence says it committed before the round began, asked with ``NOT
EXISTS`` instead of a ``LEFT JOIN`` (a payment with no evidence still
counts), and the cents summed with a ``FILTER`` clause."""

THIS_ROUND = """
SELECT count(*) AS payments,
       coalesce(sum(p.amount_cents) FILTER (WHERE p.currency = :currency), 0)
         AS cents
  FROM payments AS p
 WHERE NOT EXISTS (SELECT 1 FROM payment_evidence AS e
                    WHERE e.key = p.key AND e.committed_unix < :round_start)
"""
