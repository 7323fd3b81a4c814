"""The label is told apart by the clock. Caught by
``test_a_label_depends_on_the_claim_alone``."""

import time


def claim_label(claim: Claim) -> str:
    """Work, owner and when: the time tells two lines apart."""
    return f"{claim.id} claimed by {claim.owner} at {time.time_ns()}"
