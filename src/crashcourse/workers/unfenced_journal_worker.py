"""The negative control of the pause campaigns: chapter 07's journal worker
with its fence taken out (issue 29).

    python -m crashcourse.workers.unfenced_journal_worker --dir DIR --task TASK ...

The same options and the same code as ``journal_worker``, with three checks
replaced: ``journal.holds`` reads the work row and never refuses (no stale
claim, no cancel, no pause flag: every fenced write and every admission goes
through, its declared wait always fits), ``fence.lease_held_at_commit`` (the
check before COMMIT) does nothing, and the pause flag between steps is never
seen. Its claim is still taken at start, so a run that never claimed is
refused as before: what this worker lacks is the fence of a holder that
claimed and was then frozen. The pause campaign (``crashcourse.lab.pauses``)
runs it at the real worker's instants and must catch it; nothing else may
use it.
"""

from __future__ import annotations

import sys

from crashcourse import control, journal, store
from crashcourse.claims import fence
from crashcourse.workers import journal_worker

UNFENCED_LEASE_S = 3600.0  # the lease it believes it has, whatever the row says


def holds_unchecked(conn, claim, now=None):
    """``journal.holds`` without its rule: the row, read, and never judged."""
    row, at = dict(conn.execute(journal.HOLDER, {"id": claim.id}).fetchone()), \
        store.now(conn, now)
    row["expires"] = at + UNFENCED_LEASE_S  # every wait fits: never too short
    return {**row, "paused": 0}, at


def unfenced() -> None:
    """Take the fence out of this process's journal."""
    journal.holds = holds_unchecked
    fence.lease_held_at_commit = lambda *args, **kwargs: None
    journal.renews = lambda *args: False  # a renewal would be fenced
    control.is_paused = lambda conn: False


if __name__ == "__main__":
    unfenced()
    sys.exit(journal_worker.main())
