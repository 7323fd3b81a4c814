"""WRONG ANSWER to exercise 05.1 (chapter 05): the label carries ``hash(claim)``.

The mistake: a ``Claim`` is a frozen dataclass, so ``hash`` gives each claim
its own number, the same every time within one process, and two claims of
one work under one owner differ in their generation. Every test in one
process passes. But Python salts the hash of a string anew in every process
(``PYTHONHASHSEED``), so a label in one worker's log names nothing in
another's, nor in the same worker's after a restart. Caught by
``test_another_process_gives_a_claim_the_same_label``.
"""


def claim_label(claim: Claim) -> str:
    """Work, owner and the claim's hash: a number of its own per claim."""
    return f"{claim.id} claimed by {claim.owner} (claim {hash(claim):x})"
