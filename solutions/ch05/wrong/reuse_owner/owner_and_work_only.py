"""WRONG ANSWER to exercise 05.1 (chapter 05): the label leaves out the generation.

The mistake: the log names the work and the owner, which is what a log line
usually says. Every worker is ``shop-worker``, so the two claims print the
same line, and after an incident nobody can tell which execution wrote what,
although the database refused one of them. Caught by
``test_labels_tell_two_claims_under_one_owner_apart``.
"""


def claim_label(claim: Claim) -> str:
    """Work and owner: what the claim is about and who holds it."""
    return f"{claim.id} claimed by {claim.owner}"
