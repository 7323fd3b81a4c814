"""WRONG ANSWER to exercise 05.1 (chapter 05): the label leaves out the generation.

The mistake: the log names the work and the owner, which is what a log line
usually says. Every worker is ``shop-worker``, so the two claims print the
same line, and after an incident nobody can tell which execution wrote what,
although the database refused one of them. Caught by
``test_labels_tell_two_claims_under_one_owner_apart``.
"""

from __future__ import annotations

import sqlite3

from crashcourse import claims, fence
from crashcourse.claims import Claim


def claim_label(claim: Claim) -> str:
    """Work and owner: what the claim is about and who holds it."""
    return f"{claim.id} claimed by {claim.owner}"


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
