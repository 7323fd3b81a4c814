"""Cents added across currencies. Caught by
``test_a_payment_in_another_currency_is_not_covered``."""

PER_ORDER_AND_CURRENCY = "p.order_id"  # cents are cents, whatever the currency
APPROVAL_BESIDE = "LEFT JOIN approvals AS a ON a.order_id = p.order_id"
