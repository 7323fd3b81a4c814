"""One bounded wait: ask again until something is true, for at most so long.

A parent often waits for something only the rows, a file or the kernel can
show: a worker's effects committed, a server ready, a process stopped. Every
such wait in the runtime, the checkpoints, the tests and the chapters is this
one, so every one of them is bounded the same way and, when it gives up,
says what never happened:

    wait_until(lambda: len(runs()) >= 3, 60, what="three runs")

``wait_until`` asks ``predicate()`` at once and then every ``interval``
seconds, and returns the first true answer. Once ``timeout`` seconds have
passed without one it raises ``TimeoutError`` naming ``what``: a hung worker
fails the experiment that waited for it instead of stalling it forever. An
exception raised by the predicate itself is not a "not yet": it goes straight
to the caller, so a broken check is never mistaken for a slow one.

The standard library only, and nothing else of this package: the parent side,
the services and the tests all wait with it.
"""

from __future__ import annotations

import math
import time

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["INTERVAL", "wait_until", "waits_in"]

TYPE_CHECKING = False  # cheap to import anywhere, a worker included
if TYPE_CHECKING:
    from collections.abc import Callable

INTERVAL = 0.02  # seconds between two looks at rows or files: cheap, yet prompt


def wait_until(predicate: Callable[[], object], timeout: float, *,
               interval: float = INTERVAL, what: str) -> object:
    """The first true value ``predicate()`` returns, asked every ``interval``
    seconds; ``TimeoutError`` naming ``what`` once ``timeout`` seconds passed.

    The predicate is asked at least once, and once more at the deadline, so a
    condition that came true during the last sleep is not missed. ``timeout``
    must be finite: an unbounded wait is what this exists to rule out."""
    if not 0 <= timeout < math.inf:
        raise ValueError(f"timeout must be finite seconds >= 0, got {timeout!r}")
    if not 0 < interval < math.inf:
        raise ValueError(f"interval must be finite seconds > 0, got {interval!r}")
    deadline = time.monotonic() + timeout
    while True:
        found = predicate()  # its own exceptions pass through: not a "not yet"
        if found:
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"never saw {what} within {timeout:g} s")
        time.sleep(min(interval, left))


def waits_in(thread, function: str, caller: str) -> bool:
    """Whether ``thread`` is, right now, inside ``function`` (its innermost
    Python frame: a call into C, a lock's ``BEGIN``, blocks there) called from
    ``caller`` somewhere up its stack. Where a blocked call is blocked, read
    from the interpreter: a thread shown there has not passed that point,
    whatever the scheduler did, where "still running after 0.5 s" only says
    it was slow (issue 36). False for a thread that has ended."""
    import sys

    frame = sys._current_frames().get(thread.ident)
    if frame is None or frame.f_code.co_name != function:
        return False
    while frame is not None:
        if frame.f_code.co_name == caller:
            return True
        frame = frame.f_back
    return False
