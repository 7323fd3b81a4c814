"""Collect an owned child's output and exit without polling (chapter 00).

``subprocess.Popen.communicate(timeout=...)`` reads the pipes with blocking
waits, but then reaps the child in a sleep-and-poll loop (1, 2, 4 ... up to
50 ms): a visible share of a kill-and-resume trial that lasts tens of
milliseconds. ``Collector`` watches the child's stdout, its stderr and its
pidfd (Linux 5.3+, readable once the child has exited) in one ``poll``, so
every wait blocks until something happened, bounded by a deadline. Without a
pidfd it falls back on Popen's own bounded wait.

Used by ``crashcourse.lab.harness``; workers never import it.
"""

from __future__ import annotations

import os
import select
import subprocess
import time


class Collector:
    """Reads a ``text=True`` child's two pipes to their end, then reaps it."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.open = [process.stdout.fileno(), process.stderr.fileno()]
        self.read: dict[int, list[bytes]] = {fd: [] for fd in self.open}

    def collect(self, timeout: float) -> tuple[str, str]:
        """stdout and stderr once the child has exited and been reaped; at most
        ``timeout`` s, else ``TimeoutExpired`` (what was read is kept)."""
        deadline = time.monotonic() + timeout
        exit_fd = pidfd(self.process)
        waiting = [*self.open, *([] if exit_fd is None else [exit_fd])]
        poller = select.poll()
        for fd in waiting:
            poller.register(fd, select.POLLIN)
        try:
            while waiting:
                remaining = deadline - time.monotonic()
                events = poller.poll(remaining * 1000) if remaining > 0 else []
                if not events:
                    raise subprocess.TimeoutExpired(self.process.args, timeout)
                for fd, _ in events:
                    if fd != exit_fd and (chunk := os.read(fd, 65536)):
                        self.read[fd].append(chunk)
                        continue
                    if fd in self.open:  # end of file: the child's end is closed
                        self.open.remove(fd)
                    waiting.remove(fd)
                    poller.unregister(fd)
        finally:
            if exit_fd is not None:
                os.close(exit_fd)
        # It has exited (its pidfd said so): this reaps it at once, no sleep.
        self.process.wait(timeout=max(deadline - time.monotonic(), 0))
        streams = (self.process.stdout, self.process.stderr)
        out, err = (self.text(stream) for stream in streams)
        for stream in streams:
            stream.close()
        return out, err

    def text(self, stream) -> str:
        """One pipe's bytes as ``text=True`` gives them (universal newlines)."""
        data = b"".join(self.read[stream.fileno()]).decode(stream.encoding,
                                                           stream.errors)
        return data.replace("\r\n", "\n").replace("\r", "\n")


def pidfd(process: subprocess.Popen) -> int | None:
    """A descriptor that becomes readable when ``process`` exits; None when it
    has been reaped already or the system has no pidfds."""
    if process.returncode is not None or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(process.pid)
    except OSError:
        return None  # Popen's own wait still bounds the reaping
