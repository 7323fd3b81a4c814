"""An inner join with the approvals. Caught by
``test_a_payment_without_any_approval_is_overcharged``."""

APPROVAL_BESIDE = """JOIN approvals AS a  -- every payment has its approval
         ON a.order_id = p.order_id
        AND a.currency = p.currency"""
