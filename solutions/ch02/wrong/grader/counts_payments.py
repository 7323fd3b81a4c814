"""Counts payments, not cents. Caught by
``test_a_payment_without_any_approval_is_overcharged`` and
``test_installments_within_the_approval_are_clean``."""

TOO_MUCH = "count(*) > 1"  # one approval pays one invoice once
