"""Exercise 10.2: which write lands? (chapter 10)

*Predict, then run.* Below is a way to write down what happened to one piece
of work, as the DATABASE saw it, in the order it saw it: claims granted (to
which worker, with what lease), an operator's cancel, and writes (a
transcript line, ``fence.observe``) offered by a worker under one of its
claims. Every instant (``at``) is the database server's clock. A write also
says what the worker's OWN clock read when it wrote (``local_clock``): the
workers run on different hosts, and their clocks disagree.

Write ``lands``: for each ``Wrote`` in a history, whether the runtime's fence
lets it in. The tests first check your answers on histories written out by
hand, then replay every history on the real runtime (claims, cancel and
writes on a PostgreSQL store, at the same instants) and compare.
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
    """For each ``Wrote`` in ``history``, in order: True if the fence lets the
    write in, False if it refuses it. A write changes nothing a later write is
    judged by (a transcript line is not a finish)."""
    raise NotImplementedError("exercise 10.2: judge each write as the fence would")
