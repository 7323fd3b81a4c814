"""A correct answer in other SQL: the evidence looked up beside the payment
by two scalar subqueries, no join (a payment without an evidence row still
answers, its terms NULL); and the reasons gathered in a loop, in the same
order."""

EVIDENCE = (
    "SELECT p.order_id, p.amount_cents, p.currency,"
    " (SELECT e.policy_version FROM payment_evidence AS e WHERE e.key = p.key)"
    "   AS policy_version,"
    " (SELECT e.expires_unix FROM payment_evidence AS e WHERE e.key = p.key)"
    "   AS expires_unix"
    " FROM payments AS p WHERE p.key = :key")


def every_reason(approval, action, now, policy) -> tuple[str, ...]:
    if approval is None:
        return ("not_approved",)
    if approval["amount_cents"] != action["amount_cents"]:
        return ("not_approved",)
    if approval["currency"] != action["currency"]:
        return ("not_approved",)
    reasons = []
    if approval["revoked"]:
        reasons.append("approval_revoked")
    if expired(approval["expires_unix"], now):
        reasons.append("approval_expired")
    if approval["policy_version"] != policy:
        reasons.append("policy_changed")
    return tuple(reasons)
