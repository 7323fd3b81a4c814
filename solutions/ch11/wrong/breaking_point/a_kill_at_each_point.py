"""A kill at every point. Caught by
``test_the_wrong_ordering_breaks_where_the_checkpoint_reaches_the_disk``."""

import tempfile
from pathlib import Path

from crashcourse.powerloss.images import SCRATCH, image_at


def first_break(recorder, count: int) -> int | None:
    """Resume on the kill image of every point."""
    for point in range(len(recorder.events) + 1):
        with tempfile.TemporaryDirectory(dir=SCRATCH) as scratch:
            for name, data in image_at(recorder, point, killed=True).items():
                (Path(scratch) / name).write_bytes(data)
            verdict = resume_payments(Path(scratch), count)
        if not verdict["corrupt"] and verdict["unpaid"]:
            return point
    return None
