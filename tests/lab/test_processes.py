"""The waits until a signal took effect (crashcourse.lab.processes, issue 36).

Each wait is shown to hold back while its state cannot yet be reached (the
child is blocked on a pipe the test holds, so no scheduler can let it get
there early) and to return once it is, with the state then read at once
showing what was waited for. A wait that returned early (as a bare
``os.kill`` does: delivered is not done) fails the first half."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from crashcourse.lab.harness import Harness
from crashcourse.lab.processes import (
    gone,
    group_members,
    state,
    wait_gone,
    wait_group_continued,
    wait_group_gone,
    wait_group_stopped,
    wait_stopped,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads /proc")

HELD = 0.3  # seconds a wait is given while its state is out of reach: any will do
BOUND = 30.0  # generous: the state is reached in milliseconds, unless broken

# Stops itself once the parent writes a line: until then it cannot be stopped
# by anything but the test's own signal.
STOPS_ON_CUE = ("import os, signal, sys\n"
                "sys.stdin.readline()\n"
                "os.kill(os.getpid(), signal.SIGSTOP)\n"
                "sys.stdin.readline()\n")
# Catches SIGTERM and exits only once the parent writes a line.
EXITS_ON_CUE = ("import signal, sys\n"
                "def later(signum, frame):\n"
                "    sys.stdin.readline(); sys.exit(0)\n"
                "signal.signal(signal.SIGTERM, later)\n"
                "print('ready', flush=True)\n"
                "signal.pause()\n")


def child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)


def end(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(BOUND)


def test_wait_stopped_holds_back_until_the_process_is_stopped():
    process = child(STOPS_ON_CUE)
    try:
        with pytest.raises(TimeoutError, match="stopped"):
            wait_stopped(process.pid, HELD)  # blocked on its pipe: not stopped
        assert state(process.pid) not in ("T", "t")
        process.stdin.write("go\n")
        process.stdin.flush()
        wait_stopped(process.pid, BOUND)
        assert state(process.pid) == "T"  # read at once after the wait
    finally:
        end(process)


def test_wait_stopped_after_sigstop_returns_only_once_the_kernel_shows_t():
    process = child("import sys; sys.stdin.readline()")
    try:
        os.kill(process.pid, signal.SIGSTOP)
        wait_stopped(process.pid, BOUND)
        assert state(process.pid) == "T"
        os.kill(process.pid, signal.SIGCONT)
    finally:
        end(process)


def test_wait_stopped_on_a_dead_process_says_so_instead_of_waiting():
    process = child("pass")
    process.wait(BOUND)
    with pytest.raises(RuntimeError, match="ended"):
        wait_stopped(process.pid, BOUND)


def test_wait_gone_holds_back_until_the_process_has_ended():
    process = child(EXITS_ON_CUE)
    try:
        assert process.stdout.readline() == "ready\n"  # its handler is set
        os.kill(process.pid, signal.SIGTERM)  # delivered; it exits only on cue
        with pytest.raises(TimeoutError, match="gone"):
            wait_gone(process.pid, HELD)
        assert not gone(process.pid)
        process.stdin.write("go\n")
        process.stdin.flush()
        wait_gone(process.pid, BOUND)
        assert state(process.pid) in (None, "Z")  # unreaped: a zombie at most
    finally:
        end(process)
    assert state(process.pid) is None  # reaped


def test_wait_gone_after_sigkill_sees_a_zombie_as_gone():
    process = child("import sys; sys.stdin.readline()")
    try:
        os.kill(process.pid, signal.SIGKILL)
        wait_gone(process.pid, BOUND)
        assert state(process.pid) == "Z"  # ours, not reaped yet: nothing runs
    finally:
        end(process)


def test_group_waits_cover_every_process_of_the_group():
    code = ("import subprocess, sys\n"
            "kid = subprocess.Popen([sys.executable, '-c',"
            " 'import sys; sys.stdin.readline()'])\n"
            "print(kid.pid, flush=True)\n"
            "sys.stdin.readline()\n")
    process = child(code)
    try:
        kid = int(process.stdout.readline())
        assert set(group_members(process.pid)) == {process.pid, kid}
        os.killpg(process.pid, signal.SIGSTOP)
        wait_group_stopped(process.pid, BOUND)
        assert state(process.pid) == state(kid) == "T"
        os.killpg(process.pid, signal.SIGCONT)
        wait_group_continued(process.pid, BOUND)
        assert state(process.pid) not in ("T", "t") and state(kid) not in ("T", "t")
        with pytest.raises(TimeoutError, match="stopped"):  # running: never T
            wait_group_stopped(process.pid, HELD)
        os.killpg(process.pid, signal.SIGKILL)
        wait_group_gone(process.pid, BOUND)
        assert gone(process.pid) and gone(kid)
    finally:
        end(process)


def test_a_worker_frozen_by_the_harness_shows_stopped_when_freeze_returns():
    with Harness() as harness:
        worker = harness.start(["-c", "while True: pass"])  # always running
        worker.freeze()
        assert state(worker.pid) == "T"  # no wait of the caller's own
        worker.thaw()
    assert gone(worker.pid)
