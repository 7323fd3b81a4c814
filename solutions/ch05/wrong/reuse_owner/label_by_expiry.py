"""WRONG ANSWER to exercise 05.1 (chapter 05): the lease's end tells claims apart.

The mistake: the label carries the work, the owner and when the lease ends.
In the exercise's own run the two claims end at different instants, so the
two lines differ. But the end of a lease is not a claim's name: a claim
cancelled early and the next one granted with a shorter lease can end at
the same instant, and two different claims then print one label. Only the
generation is new with every claim. Caught by
``test_two_claims_share_a_label_only_when_they_are_one_claim``.
"""


def claim_label(claim: Claim) -> str:
    """Work, owner and the lease's end: each claim has its own lease."""
    return f"{claim.id} claimed by {claim.owner} until {claim.expires:.3f}"
