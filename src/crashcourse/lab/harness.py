"""Kill a worker at a named boundary and start its replacement (chapter 00).

The worker side is ``crashcourse.boundary`` (kept tiny so workers start fast,
and imported from there, never from here): ``boundary("after_payment")``
marks a registered point in the worker's code.

This module is the parent side: ``Harness`` starts owned workers (each in its
own process group, with ``sys.executable``), waits for a marker with a
deadline, sends SIGKILL to that worker's own group, checks the exit status is
-9, and starts a replacement. On leaving the ``with`` block it kills and reaps
whatever it started, with what those left in their groups, also when a test
failed inside the block. It never signals a process it did not start.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from crashcourse.boundary import CONTROL_FD_ENV, MARKER_FD_ENV, STOP_AT_ENV
from crashcourse.lab.pipes import Collector
from crashcourse.lab.processes import wait_group_gone, wait_group_stopped

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["DEFAULT_TIMEOUT", "BoundaryTimeout", "BoundaryNotReached", "Finished",
    "last_words", "Worker", "terminate_unwinds", "exit_on_terminate", "Harness",
    "Interruption", "kill_and_resume"]

# Every wait is bounded, but generously: CI runs the tests and the notebooks
# side by side on two cores, where a bound of a few seconds leaves no margin
# for a slow start or fsync. A hung worker is still caught, only later.
DEFAULT_TIMEOUT = 60.0


class BoundaryTimeout(TimeoutError):
    """The worker did not reach its boundary in time (it has been killed)."""


class BoundaryNotReached(RuntimeError):
    """The worker exited without reaching the boundary it was asked to stop at."""


@dataclass
class Finished:
    """A worker that has exited and been reaped."""

    pid: int
    returncode: int
    stdout: str
    stderr: str


class Moments(list):
    """The parent's own instants in one trial, for the timeline ``make
    checkpoints`` draws beside the evidence: each ``{"what", "at"}``,
    ``at`` the wall clock read by ``mark`` at the event itself (just before a
    start; just after a boundary was announced, a kill reaped, an exit),
    never a planned time. A list, so it goes into the evidence as it is."""

    def mark(self, what: str) -> float:
        """Record that ``what`` has just happened; its instant (Unix s)."""
        at = time.time()
        self.append({"what": what, "at": at})
        return at


def last_words(finished: Finished, lines: int = 3) -> str:
    """The exit status and the last lines a worker wrote on stderr, for the
    message of a trial it never reached the point of: the evidence then says
    why (a traceback, a refusal), not only that."""
    tail = " | ".join(finished.stderr.strip().splitlines()[-lines:])
    return f" (exit {finished.returncode}" + (f"; stderr: {tail})" if tail else ")")


@dataclass
class Worker:
    """One owned child process, optionally asked to stop at a boundary."""

    process: subprocess.Popen
    stop_at: str | None
    marker_fd: int | None
    control_fd: int | None
    started: float = field(default_factory=time.monotonic)
    finished: Finished | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.output = Collector(self.process)  # its pipes and its exit

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_for_boundary(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Block until the worker announces its boundary, at most ``timeout`` s."""
        ready, _, _ = select.select([self.marker_fd], [], [], timeout)
        line = os.read(self.marker_fd, 256).decode() if ready else None
        if line is None:
            said = last_words(self.kill(expect_sigkill=False))
            raise BoundaryTimeout(
                f"worker did not reach {self.stop_at!r} within {timeout} s; "
                f"it was killed and reaped{said}"
            )
        if line.strip() != self.stop_at:
            said = last_words(self.kill(expect_sigkill=False))
            raise BoundaryNotReached(f"worker exited before {self.stop_at!r}{said}")

    def release(self) -> None:
        """Let a worker held at its boundary go on."""
        os.write(self.control_fd, b"go\n")

    def freeze(self) -> None:
        """SIGSTOP its group: alive, holding what it holds, doing nothing, as a
        process in a long GC pause or on a descheduled VM (chapters 05-09)."""
        if self.process.poll() is not None:
            raise RuntimeError(f"worker {self.pid} has exited: nothing to freeze")
        os.killpg(self.pid, signal.SIGSTOP)
        # Delivered is not done: it stops when the kernel next runs it. Wait
        # until every process of the group shows T, or what the caller reads
        # next (a file, a row) is still being written by a "frozen" worker.
        wait_group_stopped(self.pid, DEFAULT_TIMEOUT, what=f"worker {self.pid}'s group")

    def thaw(self) -> None:
        """SIGCONT its group: a frozen worker goes on where it stopped."""
        if self.process.returncode is None:
            os.killpg(self.pid, signal.SIGCONT)

    def kill(self, expect_sigkill: bool = True) -> Finished:
        """SIGKILL this worker's own process group, reap it, return its status."""
        self.kill_group()
        finished = self.collect(timeout=DEFAULT_TIMEOUT)
        # The leader is reaped; what it left in its group may still run (and
        # write) until the kernel gets to it: the kill is done when none runs.
        wait_group_gone(self.pid, DEFAULT_TIMEOUT, what=f"worker {self.pid}'s group")
        if expect_sigkill and finished.returncode != -signal.SIGKILL:
            raise AssertionError(f"expected exit status -9, got {finished.returncode}")
        return finished

    def kill_group(self) -> None:
        """SIGKILL its group, also once it exited (what it left behind)."""
        if self.process.returncode is None:  # unreaped: its pid holds the group id
            os.killpg(self.pid, signal.SIGKILL)

    def finish(self, timeout: float = DEFAULT_TIMEOUT) -> Finished:
        """Wait (bounded) for a normal exit; a worker that overruns is killed."""
        try:
            return self.collect(timeout)
        except subprocess.TimeoutExpired:
            self.kill(expect_sigkill=False)
            raise TimeoutError(f"worker did not exit within {timeout} s") from None

    def collect(self, timeout: float) -> Finished:
        """Its output and status once it has exited (``pipes.Collector``: no
        sleep-and-poll); ``TimeoutExpired`` after ``timeout`` s."""
        if self.finished is None:
            out, err = self.output.collect(timeout)
            self.close_pipes()
            self.finished = Finished(self.pid, self.process.returncode, out, err)
        return self.finished

    def close_pipes(self) -> None:
        for fd in (self.marker_fd, self.control_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass  # already closed
        self.marker_fd = self.control_fd = None


def terminate_unwinds() -> None:
    """Make SIGTERM (``timeout``, ``kill``, a CI job stopped) raise
    ``SystemExit`` in this process, so every ``with Harness()`` block unwinds
    and kills its workers' groups. By default the process dies at once and
    its workers, a supplier among them, run on with nobody to stop them.
    Only in the main thread (where handlers live) and only where nobody set a
    handler of their own. SIGKILL cannot be caught: nothing helps there."""
    import threading

    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
        signal.signal(signal.SIGTERM, exit_on_terminate)


def exit_on_terminate(signum, frame) -> None:
    raise SystemExit(128 + signum)  # the shell's status for a death by SIGTERM


class Harness:
    """Owns the workers it starts; kills and reaps leftovers on exit."""

    def __init__(self, env: dict | None = None, cwd: str | None = None):
        self.env = {**os.environ, **(env or {})}
        self.cwd = cwd
        self.workers: list[Worker] = []

    def __enter__(self) -> Harness:
        terminate_unwinds()
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()

    def start(self, args: Sequence[str], stop_at: str | None = None) -> Worker:
        """Start ``python args...``; with ``stop_at`` it holds at that boundary."""
        env = {key: value for key, value in self.env.items() if key != STOP_AT_ENV}
        marker_r = marker_w = control_r = control_w = None
        passed: tuple[int, ...] = ()
        if stop_at is not None:
            marker_r, marker_w = os.pipe()
            control_r, control_w = os.pipe()
            passed = (marker_w, control_r)
            env |= {
                STOP_AT_ENV: stop_at,
                MARKER_FD_ENV: str(marker_w),
                CONTROL_FD_ENV: str(control_r),
            }
        process = subprocess.Popen(
            [sys.executable, *args],
            env=env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=passed,
            start_new_session=True,  # its own group: a kill never reaches us
        )
        for fd in passed:
            os.close(fd)  # the child holds these ends now
        worker = Worker(process, stop_at, marker_r, control_w)
        self.workers.append(worker)
        return worker

    def run(self, args: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> Finished:
        """Start a worker with no boundary and wait (bounded) for it to exit."""
        return self.start(args).finish(timeout)

    def cleanup(self) -> None:
        """Kill and reap every owned worker and what it left in its group."""
        for worker in self.workers:
            worker.kill_group()
            try:
                worker.collect(timeout=DEFAULT_TIMEOUT)
            except (subprocess.TimeoutExpired, ValueError):
                pass  # reaped already, or streams closed by an earlier collect
            worker.close_pipes()
        for worker in self.workers:  # SIGKILL is delivered, not done
            wait_group_gone(worker.pid, DEFAULT_TIMEOUT,
                            what=f"worker {worker.pid}'s group")


@dataclass
class Interruption:
    """What one kill-and-resume trial observed, all read after the fact."""

    boundary: str
    interrupted_pid: int
    interrupted_returncode: int
    snapshot_at_interruption: dict
    resumed_pid: int
    resumed_returncode: int
    resumed_stdout: str
    final_snapshot: dict
    timeline_ms: dict
    moments: Moments = field(default_factory=Moments)  # the same, as instants


def kill_and_resume(
    harness: Harness,
    args: Sequence[str],
    boundary_name: str,
    snapshot: Callable[[], dict],
    resume_args: Sequence[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    between: Callable[[], object] | None = None,
) -> Interruption:
    """Start ``args``, SIGKILL it at ``boundary_name``, run the replacement.

    ``between`` runs after the kill and the first snapshot, before the
    replacement starts: the place to revoke an approval or change a policy.
    """
    t0 = time.monotonic()
    moments = Moments()

    def mark(what: str) -> float:
        moments.mark(what)
        return round((time.monotonic() - t0) * 1000, 3)

    worker = harness.start(args, stop_at=boundary_name)
    worker.wait_for_boundary(timeout)
    at_boundary = mark(f"at {boundary_name}")
    killed = worker.kill()
    at_kill = mark("killed")
    at_interruption = snapshot()
    if between is not None:
        between()
    moments.mark("start")
    resumed = harness.run(resume_args or args, timeout)
    at_resumed_exit = mark(f"exit {resumed.returncode}")
    return Interruption(
        boundary=boundary_name,
        interrupted_pid=killed.pid,
        interrupted_returncode=killed.returncode,
        snapshot_at_interruption=at_interruption,
        resumed_pid=resumed.pid,
        resumed_returncode=resumed.returncode,
        resumed_stdout=resumed.stdout,
        final_snapshot=snapshot(),
        timeline_ms={
            "boundary": at_boundary,
            "killed": at_kill,
            "resumed_exit": at_resumed_exit,
        },
        moments=moments,
    )
