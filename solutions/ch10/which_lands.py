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
        if isinstance(event, Wrote):
            verdicts.append(row["running"] and same_claim(row, event)
                            and in_lease(row, event))
        else:
            row = after(row, event)
    return verdicts


def after(row: dict, event: Claimed | Cancelled) -> dict:
    """The work row once a claim or the operator's cancel is applied."""
    if isinstance(event, Claimed):
        return {"generation": row["generation"] + 1, "owner": event.owner,
                "expires": event.at + event.ttl, "running": True}
    # a cancel: a new generation nobody holds
    return {**row, "generation": row["generation"] + 1, "running": False}


def same_claim(row: dict, write: Wrote) -> bool:
    """The write's claim is the row's newest one: generation AND owner."""
    return (write.generation, write.owner) == (row["generation"], row["owner"])


def in_lease(row: dict, write: Wrote) -> bool:
    """The database's instant of the write is before the lease's end (a claim
    may take the work AT that end, so the two never share an instant)."""
    return write.at < row["expires"]
