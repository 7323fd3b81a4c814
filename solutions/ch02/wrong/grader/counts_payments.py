"""Counts payments, not cents. Caught by
``test_a_payment_without_any_approval_is_overcharged`` and
``test_installments_within_the_approval_are_clean``."""


OVERCHARGED = """
SELECT p.order_id,
       p.currency,
       count(*)                                AS payments,
       sum(p.amount_cents)                     AS charged_cents,
       coalesce(a.amount_cents, :nothing)      AS approved_cents
  FROM payments AS p
  LEFT JOIN approvals AS a            -- a payment nobody approved still counts
         ON a.order_id = p.order_id
        AND a.currency = p.currency   -- cents of one currency, never mixed
 GROUP BY p.order_id, p.currency
HAVING count(*) > 1                   -- one approval pays one invoice once
 ORDER BY p.order_id, p.currency
"""
