"""The lease's end tells claims apart. Caught by
``test_two_claims_share_a_label_only_when_they_are_one_claim``."""


def claim_label(claim: Claim) -> str:
    """Work, owner and the lease's end: each claim has its own lease."""
    return f"{claim.id} claimed by {claim.owner} until {claim.expires:.3f}"
