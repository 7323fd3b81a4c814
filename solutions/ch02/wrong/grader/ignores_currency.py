"""WRONG ANSWER to exercise 02.2 (chapter 02): cents added across currencies.

The mistake: payments are grouped by order alone and their cents compared
with the approval whatever currency each was paid in. A 4000-cent USD
approval then covers a payment of 4000 cents in EUR, which nobody approved,
and two payments of one order in two currencies are added as if they were
one money. Caught by ``test_a_payment_in_another_currency_is_not_covered``.
"""


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
