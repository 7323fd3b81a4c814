"""Cents added across currencies. Caught by
``test_a_payment_in_another_currency_is_not_covered``."""


OVERCHARGED = """
SELECT p.order_id,
       coalesce(a.currency, min(p.currency))  AS currency,
       count(*)                                AS payments,
       sum(p.amount_cents)                     AS charged_cents,
       coalesce(a.amount_cents, :nothing)      AS approved_cents
  FROM payments AS p
  LEFT JOIN approvals AS a            -- a payment nobody approved still counts
         ON a.order_id = p.order_id
 GROUP BY p.order_id                  -- cents are cents, whatever the currency
HAVING sum(p.amount_cents) > coalesce(a.amount_cents, :nothing)
 ORDER BY p.order_id
"""
