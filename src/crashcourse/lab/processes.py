"""What the kernel says a process is doing, and bounded waits until it says so.

A signal is delivered, not done: ``os.kill(pid, SIGSTOP)`` returns once the
kernel has queued it, and the process stops only when the kernel next runs
it, which on a loaded machine can be many milliseconds later. ``SIGKILL`` is
the same: the process still runs (and writes) until the kernel gets to it.
A test or a harness that signals a process and then reads its state, its
files or its rows must first wait until the signal took effect, or the
scheduler decides what it reads. This is the one place that wait lives:

    os.killpg(pgid, signal.SIGSTOP)
    wait_group_stopped(pgid, 10, what="the worker's group")

``state`` reads the one-letter state from ``/proc/PID/stat`` (``T`` stopped,
``t`` stopped by a tracer, ``Z`` a zombie, ``None`` when there is no such
process). ``wait_stopped`` returns once ``pid`` shows stopped, ``wait_gone``
once it runs no more (gone, or a zombie: dead, waiting to be reaped by its
parent), each bounded by ``crashcourse.waiting.wait_until``: past the
timeout it raises ``TimeoutError`` naming what never happened. Linux only
(``/proc``), as every kill experiment of the book is.

Introduced by issue 36 (the CI failure of tests/tools/test_stress.py: a
SIGKILLed child still running when it was read).
"""

from __future__ import annotations

import os

from crashcourse.waiting import wait_until

STOPPED = ("T", "t")
POLL = 0.005  # seconds between two looks at /proc: a stop is usually that quick


def state(pid: int) -> str | None:
    """The kernel's one-letter state of ``pid``, or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()[0]  # after "pid (comm) ": comm may hold ")"


def group_of(pid: int) -> int | None:
    """The process group of ``pid``, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(text.rsplit(")", 1)[1].split()[2])


def group_members(pgid: int) -> list[int]:
    """Every pid in process group ``pgid`` that has not been reaped, from /proc."""
    return [int(entry) for entry in os.listdir("/proc")
            if entry.isdigit() and group_of(int(entry)) == pgid]


def stopped(pid: int) -> bool:
    """True when ``pid`` shows stopped (T or t)."""
    return state(pid) in STOPPED


def gone(pid: int) -> bool:
    """True when ``pid`` runs no more: no such process, or a zombie."""
    return state(pid) in (None, "Z")


def wait_stopped(pid: int, timeout: float, *, what: str | None = None) -> None:
    """Return once ``pid`` shows stopped; ``TimeoutError`` past ``timeout`` s,
    and at once-ish (``RuntimeError``) when it is gone: a dead process never
    stops, and waiting for it would only hide that."""
    name = what or f"pid {pid}"

    def check() -> bool:
        if gone(pid):
            raise RuntimeError(f"{name} ended while waiting for it to stop")
        return stopped(pid)

    wait_until(check, timeout, interval=POLL, what=f"{name} stopped (T)")


def wait_gone(pid: int, timeout: float, *, what: str | None = None) -> None:
    """Return once ``pid`` runs no more (gone or a zombie); ``TimeoutError``
    past ``timeout`` s."""
    wait_until(lambda: gone(pid), timeout, interval=POLL,
               what=f"{what or f'pid {pid}'} gone")


def wait_group_stopped(pgid: int, timeout: float, *, what: str | None = None) -> None:
    """Return once every live process in group ``pgid`` shows stopped (the
    dead ones are not waited for: nothing of theirs runs)."""
    name = what or f"process group {pgid}"
    wait_until(lambda: all(stopped(pid) or gone(pid) for pid in group_members(pgid)),
               timeout, interval=POLL, what=f"every process of {name} stopped (T)")


def wait_group_continued(pgid: int, timeout: float, *, what: str | None = None) -> None:
    """Return once no process of group ``pgid`` shows stopped (after SIGCONT)."""
    name = what or f"process group {pgid}"
    wait_until(lambda: not any(stopped(pid) for pid in group_members(pgid)),
               timeout, interval=POLL, what=f"every process of {name} running again")


def wait_group_gone(pgid: int, timeout: float, *, what: str | None = None) -> None:
    """Return once no process of group ``pgid`` runs (each gone or a zombie)."""
    name = what or f"process group {pgid}"
    wait_until(lambda: all(gone(pid) for pid in group_members(pgid)),
               timeout, interval=POLL, what=f"every process of {name} gone")
