"""WRONG ANSWER to exercise 02.2 (chapter 02): counts payments, not cents.

The mistake: an order is reported when it has more than one payment, the
chapter's own ``double_charges`` rule (enough for the chapter's mutant),
instead of when its payments add up to more than its approval. It catches
the mutant, but it misses a single payment nobody approved
(``test_a_payment_without_any_approval_is_overcharged``) and accuses an
order paid in two installments that stay within the approval
(``test_installments_within_the_approval_are_clean``).
"""


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
