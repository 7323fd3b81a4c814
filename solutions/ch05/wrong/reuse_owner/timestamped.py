"""WRONG ANSWER to exercise 05.1 (chapter 05): the label is told apart by the clock.

The mistake: the two labels differ because each carries the time it was
printed, not anything about the claim. Two log lines of ONE claim get two
labels, and two claims logged in the same tick could share one; a reader
after an incident still cannot say which claim a line belongs to. Caught by
``test_a_label_depends_on_the_claim_alone``.
"""


import time


def claim_label(claim: Claim) -> str:
    """Work, owner and when: the time tells two lines apart."""
    return f"{claim.id} claimed by {claim.owner} at {time.time_ns()}"
