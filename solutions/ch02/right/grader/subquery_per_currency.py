"""A correct answer in other SQL: each order's payments summed per currency
first (a subquery), the approval looked up beside them, no join at all."""


def overcharged_sql() -> str:
    return """
SELECT paid.order_id, paid.currency, paid.payments, paid.charged_cents,
       coalesce((SELECT a.amount_cents FROM approvals AS a
                  WHERE a.order_id = paid.order_id
                    AND a.currency = paid.currency), :nothing) AS approved_cents
  FROM (SELECT order_id, currency, count(*) AS payments,
               sum(amount_cents) AS charged_cents
          FROM payments GROUP BY order_id, currency) AS paid
 WHERE paid.charged_cents > coalesce((SELECT a.amount_cents FROM approvals AS a
                                       WHERE a.order_id = paid.order_id
                                         AND a.currency = paid.currency), :nothing)
 ORDER BY paid.order_id, paid.currency
"""
