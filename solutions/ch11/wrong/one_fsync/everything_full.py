"""WRONG ANSWER to exercise 11.2 (chapter 11): sync everything, to be safe.

The mistake: every file in WAL+FULL. Nothing is lost, and the worker pays an
fsync per checkpoint that buys nothing: a checkpoint a power cut takes is
paid again under the same operation key, and the service answers with the
payment it recorded. Caught by
``test_the_worker_s_checkpoint_pays_no_fsync_per_commit``.
"""

from __future__ import annotations

from crashcourse.powerloss import Mode

RECORD, PROGRESS = "system of record", "own progress"


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for every file."""
    return dict.fromkeys(roles, Mode("WAL", "FULL"))
