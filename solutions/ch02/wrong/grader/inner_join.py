"""An inner join with the approvals. Caught by
``test_a_payment_without_any_approval_is_overcharged``."""


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
