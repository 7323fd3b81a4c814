"""The label leaves out the generation. Caught by
``test_labels_tell_two_claims_under_one_owner_apart``."""


def claim_label(claim: Claim) -> str:
    """Work and owner: what the claim is about and who holds it."""
    return f"{claim.id} claimed by {claim.owner}"
