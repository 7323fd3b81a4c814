"""Exercise 10.2: which write lands? (chapter 10). Reference answer.

Walk the history once, keeping what the work row would say: the generation
and owner of the newest claim, its lease, and whether it was cancelled. A
write lands only if its claim is that newest claim (generation and owner),
the work is not cancelled, and the database's instant of the write is
before the lease's end. The worker's own clock is never read: it is not the
clock the leases were written with.
"""

from __future__ import annotations

from typing import NamedTuple


class Claimed(NamedTuple):
    """``owner`` was granted a claim at ``at``, for ``ttl`` seconds. Each
    claim granted on the work has the next generation: 1, 2, ..."""

    owner: str
    at: float
    ttl: float


class Cancelled(NamedTuple):
    """The operator cancelled the work at ``at`` (``fence.cancel``)."""

    at: float


class Wrote(NamedTuple):
    """``owner`` offered a write under its claim of ``generation``, reaching
    the database at ``at``, while its own clock read ``local_clock``."""

    owner: str
    generation: int
    at: float
    local_clock: float


def lands(history: list) -> list[bool]:
    """For each ``Wrote`` in ``history``, in order: does the fence let it in?"""
    row = {"generation": 0, "owner": None, "expires": None, "running": False}
    verdicts = []
    for event in history:
        if isinstance(event, Claimed):
            row = {"generation": row["generation"] + 1, "owner": event.owner,
                   "expires": event.at + event.ttl, "running": True}
        elif isinstance(event, Cancelled):  # a new generation nobody holds
            row = {**row, "generation": row["generation"] + 1, "running": False}
        else:
            verdicts.append(row["running"]
                            and (event.generation, event.owner)
                            == (row["generation"], row["owner"])
                            and event.at < row["expires"])
    return verdicts
