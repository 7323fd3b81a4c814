"""The negative control of the pause campaigns: chapter 07's journal worker
with its fence taken out (issue 29).

    python -m crashcourse.workers.unfenced_journal_worker --dir DIR --task TASK ...

The same options and the same code as ``journal_worker``, with three checks
replaced: ``fence.assert_current`` reads the work row and never refuses (no
stale claim, no cancel, no pause flag: every journal write and every
admission goes through, its declared wait always fits; the lease given back
at the end is still judged), ``fence.lease_held_at_commit`` (the
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


def read_unchecked(conn, claim, now=None, *, record=False):
    """``fence.assert_current`` without its rule: the row, read, and never
    judged."""
    row, at = dict(conn.execute(fence.HOLDER, {"id": claim.id}).fetchone()), \
        store.now(conn, now)
    row["expires"] = at + UNFENCED_LEASE_S  # every wait fits: never too short
    return {**row, "paused": 0}, at


def unfenced() -> None:
    """Take the fence out of this process's journal: its writes and its
    admissions. The lease given back at the end (``fence.release``) is
    judged as in the real worker, so a cancel's row still stands."""
    checked, release = fence.assert_current, fence.release

    def release_judged(*args, **options):
        fence.assert_current = checked
        try:
            return release(*args, **options)
        finally:
            fence.assert_current = read_unchecked

    fence.assert_current, fence.release = read_unchecked, release_judged
    fence.lease_held_at_commit = lambda *args, **kwargs: None
    journal.renews = lambda *args: False  # a renewal would be fenced
    control.is_paused = lambda conn: False


if __name__ == "__main__":
    unfenced()
    sys.exit(journal_worker.main())
