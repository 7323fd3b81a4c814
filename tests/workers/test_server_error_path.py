"""A PostgreSQL server unreachable, or killed mid-run, is the machine refusing
(issue 35): chapter 10's worker says so in ONE line and exits 74
(``options.IO_ERROR``), where every drain died with a 35-57 line
``psycopg.OperationalError`` traceback. Each case is a real child process;
the killed case has its own throwaway server (the session's is shared)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from crashcourse import claims
from crashcourse.claims import orders
from crashcourse.store import opened
from crashcourse.store import postgres_server as pgs
from crashcourse.workers import options

WORKER = [sys.executable, "-m", "crashcourse.workers.host_worker"]


def one_line(stderr: str, status: int, returncode: int) -> str:
    lines = stderr.splitlines()
    assert returncode == status, stderr
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert lines[0].startswith("host_worker.py: error: the machine refused"), stderr
    return lines[0]


def test_an_unreachable_server_is_one_line_and_74(tmp_path):
    with socketless_port() as port:
        done = subprocess.run(
            [*WORKER, "drain", "--store", f"postgresql://u:p@127.0.0.1:{port}/db"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert "PostgreSQL" in one_line(done.stderr, options.IO_ERROR, done.returncode)


def test_a_server_killed_mid_run_is_one_line_and_74(tmp_path):
    """The drain has connected (it said ``ready``, its connection open); the
    server is then stopped, and the drain told to go on: its first claim
    finds the connection gone."""
    if pgs.binaries() is None:
        pytest.skip("no PostgreSQL binaries (pip install pgserver)")
    from crashcourse.store import postgres as pgstore

    server = pgs.start()
    try:
        pgstore.create_schema(server.url, "drain")
        url = f"{server.url}?schema=drain"
        with opened(url) as conn:
            orders.install(conn)
            claims.enqueue(conn, "phone:1", "s1", "restock")
        drain = subprocess.Popen([*WORKER, "drain", "--store", url],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            assert drain.stdout.readline().startswith("ready"), drain.stderr.read()
            pgs.stop(server)  # killed while the drain holds its connection
            _, stderr = drain.communicate("go\n", timeout=60)
        finally:
            if drain.poll() is None:
                drain.kill()
                drain.wait(timeout=10)
    finally:
        pgs.stop(server)
    one_line(stderr, options.IO_ERROR, drain.returncode)


class socketless_port:
    """A TCP port on loopback with nothing listening (bound, never listened)."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return self.sock.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self.sock.close()
