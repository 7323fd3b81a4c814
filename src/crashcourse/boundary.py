"""The worker side of the kill harness (chapter 00).

``boundary("after_payment")`` marks a registered point in a worker's code. It
does nothing unless the parent asked this process to stop there; then it writes
the name to the marker pipe and holds, bounded, until the parent kills it or
releases it (closing its end of the control pipe also ends the hold: the
worker exits ``HOLD_EXPIRED``). The bound is ``HOLD_SECONDS`` unless the
parent's environment sets ``CRASHCOURSE_HOLD_SECONDS``: a harness that reads
slowly (a framework imported under load) gives its workers longer. This
module imports only ``os`` and ``select``: every experiment
starts hundreds of workers, and their start-up time is the trial's cost.
"""

import os
import select

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["STOP_AT_ENV", "MARKER_FD_ENV", "CONTROL_FD_ENV", "HOLD_SECONDS_ENV",
    "HOLD_SECONDS", "HOLD_EXPIRED", "OBSERVERS", "hold_seconds", "boundary",
    "observing"]

STOP_AT_ENV = "CRASHCOURSE_STOP_AT"
MARKER_FD_ENV = "CRASHCOURSE_MARKER_FD"
CONTROL_FD_ENV = "CRASHCOURSE_CONTROL_FD"
HOLD_SECONDS_ENV = "CRASHCOURSE_HOLD_SECONDS"  # a harness's own bound, seconds
HOLD_SECONDS = 30.0  # a held worker nobody kills or releases gives up after this
HOLD_EXPIRED = 97  # exit status of such a worker: the parent forgot it
OBSERVERS: list = []  # in-process watchers, see ``observing``


def hold_seconds() -> float:
    """How long a held worker waits for its parent: ``HOLD_SECONDS_ENV`` if
    set, else ``HOLD_SECONDS``. ValueError unless finite seconds above 0."""
    said = os.environ.get(HOLD_SECONDS_ENV)
    if said is None:
        return HOLD_SECONDS
    try:
        seconds = float(said)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):  # NaN fails too
        raise ValueError(f"{HOLD_SECONDS_ENV} must be seconds above 0, got {said!r}")
    return seconds


def boundary(name: str) -> None:
    """Announce ``name``; if the parent asked to stop here, hold until told."""
    for observe in OBSERVERS:
        observe(name)
    if os.environ.get(STOP_AT_ENV) != name:
        return
    bound = hold_seconds()  # a bad bound is refused before the boundary is said
    os.write(int(os.environ[MARKER_FD_ENV]), f"{name}\n".encode())
    control = int(os.environ[CONTROL_FD_ENV])
    ready, _, _ = select.select([control], [], [], bound)
    if not ready or not os.read(control, 64):
        os._exit(HOLD_EXPIRED)  # neither killed nor released: never go on silently


class observing:  # noqa: N801 -- used as ``with observing(note):``; no contextlib import
    """Within the block, ``observe(name)`` hears every boundary this process
    passes, in order (chapter 11 marks "acknowledged" at the code's own
    boundaries while it records the disk)."""

    def __init__(self, observe) -> None:
        self.observe = observe

    def __enter__(self):
        OBSERVERS.append(self.observe)
        return self

    def __exit__(self, *exc) -> None:
        OBSERVERS.remove(self.observe)
