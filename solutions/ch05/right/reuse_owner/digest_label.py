"""A correct answer that looks like the ``hash(claim)`` mistake: the label
ends in a digest. But a SHA-256 of the claim's stored fields (work, owner,
generation), not Python's per-process salted ``hash``: any process that
reads the claim back computes the same label, and two claims differ. The
work and the owner are still spelled out for the person reading the log."""

import hashlib


def claim_label(claim: Claim) -> str:
    fields = f"{claim.id}\x00{claim.owner}\x00{claim.generation}"
    digest = hashlib.sha256(fields.encode()).hexdigest()[:16]
    return f"{claim.id} claimed by {claim.owner} ({digest})"
