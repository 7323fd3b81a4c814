"""WRONG ANSWER to exercise 02.2 (chapter 02): an inner join with the approvals.

The mistake: payments are joined to their approvals with a plain ``JOIN``,
so a payment whose order has no approval row at all (or none in its
currency) drops out of the query: the most suspicious charge in the file is
the one never reported. Caught by
``test_a_payment_without_any_approval_is_overcharged``.
"""


OVERCHARGED = """
SELECT p.order_id,
       p.currency,
       count(*)                                AS payments,
       sum(p.amount_cents)                     AS charged_cents,
       coalesce(a.amount_cents, :nothing)      AS approved_cents
  FROM payments AS p
  JOIN approvals AS a                 -- every payment has its approval
         ON a.order_id = p.order_id
        AND a.currency = p.currency   -- cents of one currency, never mixed
 GROUP BY p.order_id, p.currency
HAVING sum(p.amount_cents) > coalesce(a.amount_cents, :nothing)
 ORDER BY p.order_id, p.currency
"""
