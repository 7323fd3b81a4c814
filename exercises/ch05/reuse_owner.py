"""Exercise 05.1: reuse the owner label.

Every worker in the shop is configured as ``shop-worker``. Show that the
database still tells the old claim from the new one, and make the log do
the same.
"""

from __future__ import annotations

import sqlite3

from crashcourse import claims
from crashcourse.claims import fence
from crashcourse.claims import Claim


def claim_label(claim: Claim) -> str:
    """A one-line log label for a claim.

    Two claims of the same work under the same owner label must get
    different labels; the label must also name the work and the owner. The
    same claim always gets the same label: logged twice, or rebuilt from the
    database by another process.
    """
    raise NotImplementedError("exercise 05.1: write claim_label")


def replace_under_same_label(
    conn: sqlite3.Connection, work_id: str, owner: str, ttl: float, now: float
) -> tuple[Claim, Claim, fence.StaleClaim]:
    """Claim, replace under the SAME owner, then try to finish with the old claim.

    1. claim ``work_id`` as ``owner`` at instant ``now`` with lease ``ttl``;
    2. claim it again as ``owner`` at the instant the first lease expires;
    3. try ``fence.finish(conn, old, "DONE", ...)`` with the OLD claim, at an
       instant inside the new lease, and catch the refusal.

    Return ``(old, new, refusal)``. Nothing the old holder tried may be stored.
    """
    raise NotImplementedError("exercise 05.1: write replace_under_same_label")
