"""WRONG ANSWER to exercise 05.1 (chapter 05): the label is told apart by the clock.

The mistake: the two labels differ because each carries the time it was
printed, not anything about the claim. Two log lines of ONE claim get two
labels, and two claims logged in the same tick could share one; a reader
after an incident still cannot say which claim a line belongs to. Caught by
``test_a_label_depends_on_the_claim_alone``.
"""

from __future__ import annotations

import sqlite3
import time

from crashcourse import claims, fence
from crashcourse.claims import Claim


def claim_label(claim: Claim) -> str:
    """Work, owner and when: the time tells two lines apart."""
    return f"{claim.id} claimed by {claim.owner} at {time.time_ns()}"


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
