"""Exercise 05.1 answer: reuse the owner label."""

from __future__ import annotations

import sqlite3

from crashcourse import claims
from crashcourse.claims import Claim, fence


def claim_label(claim: Claim) -> str:
    """Work, owner AND generation: the generation is what tells claims apart."""
    return f"{claim.id} claimed by {claim.owner} (generation {claim.generation})"


def replace_under_same_label(
    conn: sqlite3.Connection, work_id: str, owner: str, ttl: float, now: float
) -> tuple[Claim, Claim, fence.StaleClaim]:
    """Claim, replace under the same owner, try to finish with the old claim."""
    old = claims.claim(conn, owner, ttl=ttl, now=now, work_id=work_id)
    new = claims.claim(conn, owner, ttl=ttl, now=old.expires, work_id=work_id)
    try:
        fence.finish(conn, old, "DONE", "the old holder's outcome",
                     now=old.expires + ttl / 2)
    except fence.StaleClaim as refusal:
        return old, new, refusal
    raise AssertionError("the old claim was accepted")
