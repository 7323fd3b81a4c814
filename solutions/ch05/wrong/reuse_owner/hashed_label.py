"""The label carries ``hash(claim)``. Caught by
``test_another_process_gives_a_claim_the_same_label``."""


def claim_label(claim: Claim) -> str:
    """Work, owner and the claim's hash: a number of its own per claim."""
    return f"{claim.id} claimed by {claim.owner} (claim {hash(claim):x})"
