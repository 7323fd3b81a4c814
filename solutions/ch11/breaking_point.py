"""Exercise 11.3, answered: find the crash point that breaks a wrong ordering
(chapter 11)."""

from __future__ import annotations

from crashcourse.powerloss.images import explore
from crashcourse.powerloss.runs import resume_payments


def first_break(recorder, count: int) -> int | None:
    """Judge every crash point's image by resuming the worker on it; the
    first whose resume leaves a task held done and unpaid. It is the fsync of
    the worker's WAL in its first checkpoint's commit: from there the
    checkpoint is on disk and the payment, in NORMAL, is not."""
    points = explore(recorder, lambda image: resume_payments(image, count))
    return next((point.point for point in points
                 if any(not v["corrupt"] and v["unpaid"] for v in point.verdicts)),
                None)
