"""The kill harness (chapter 00, used by chapter 02): bounded, owned, tidy."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from crashcourse.harness import (
    BoundaryNotReached,
    BoundaryTimeout,
    Harness,
    kill_and_resume,
)
from crashcourse.services import payments
from crashcourse.store import opened
from crashcourse.workers import paying

SLEEPER = ["-c", "import time; time.sleep(60)"]


def gone(pid: int) -> bool:
    """True when no process (not even a zombie) has this pid any more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_boundary_never_reached_times_out_and_cleans_up():
    with Harness() as harness:
        worker = harness.start(SLEEPER, stop_at="after_payment")
        with pytest.raises(BoundaryTimeout) as raised:
            worker.wait_for_boundary(timeout=0.5)
        assert "after_payment" in str(raised.value)
        assert "killed" in str(raised.value)  # it says what it did
        assert not worker.alive()
        assert gone(worker.pid)


def test_worker_that_exits_early_is_reported_not_waited_for():
    with Harness() as harness:
        worker = harness.start(["-c", "pass"], stop_at="after_payment")
        with pytest.raises(BoundaryNotReached):
            worker.wait_for_boundary(timeout=10)
        assert gone(worker.pid)


def test_cleanup_kills_owned_workers_even_when_an_assertion_fails():
    stranger = subprocess.Popen([sys.executable, *SLEEPER], start_new_session=True)
    try:
        with pytest.raises(AssertionError, match="inside the block"):
            with Harness() as harness:
                owned = harness.start(SLEEPER)
                raise AssertionError("failed inside the block")
        assert owned.process.returncode == -signal.SIGKILL
        assert gone(owned.pid)
        assert stranger.poll() is None  # not ours to kill: still running
    finally:
        stranger.kill()
        stranger.wait(timeout=10)


def test_kill_and_resume_leaves_no_process_behind(tmp_path):
    db = tmp_path / "payments.sqlite"
    state = tmp_path / "worker.sqlite"
    payments.install(db)
    payments.approve(db, "SUP-0042", 4000, "USD")
    args = ["-m", "crashcourse.workers.pay_invoice", "--payments", str(db),
            "--state", str(state), "--task", "restock-0042", "--order", "SUP-0042",
            "--amount", "4000", "--currency", "USD"]

    def counts() -> tuple[int, int]:
        with opened(state) as conn:
            paying.install(conn)
            checkpoints = paying.checkpoints(conn)
        return len(payments.snapshot(db)["payments"]), len(checkpoints)

    with Harness() as harness:
        trial = kill_and_resume(harness, args, "after_payment", counts, timeout=10)
        started = [w.pid for w in harness.workers]
    assert trial.interrupted_returncode == -signal.SIGKILL
    assert trial.resumed_pid != trial.interrupted_pid
    assert trial.snapshot_at_interruption == (1, 0)  # paid, not yet recorded
    assert trial.final_snapshot == (1, 1)
    assert len(started) == 2 and all(gone(pid) for pid in started)


def test_collect_reads_more_than_a_pipe_holds_and_translates_newlines():
    # 200 kB on stdout and 100 kB on stderr: a reader that waited for the exit
    # before draining the pipes would hang here until its timeout.
    code = ("import sys; sys.stdout.write('a\\r\\n' + 'o' * 200_000);"
            " sys.stderr.write('e' * 100_000)")
    with Harness() as harness:
        done = harness.run(["-c", code], timeout=30)
    assert done.returncode == 0
    assert done.stdout == "a\n" + "o" * 200_000  # as text=True gives it
    assert done.stderr == "e" * 100_000


def test_an_overrunning_worker_is_killed_and_what_it_said_is_kept():
    code = "import time; print('started', flush=True); time.sleep(60)"
    with Harness() as harness:
        worker = harness.start(["-c", code])
        with pytest.raises(TimeoutError):
            worker.finish(timeout=2)
        assert worker.finished.returncode == -signal.SIGKILL
        assert worker.finished.stdout == "started\n"
        assert worker.finish() is worker.finished  # collected once, kept
    assert gone(worker.pid)


def test_a_worker_reaped_by_its_caller_is_still_collected():
    with Harness() as harness:
        worker = harness.start(["-c", "print('done')"])
        worker.process.wait(timeout=30)  # as the chapter 07 campaign does
        done = worker.finish()
    assert (done.returncode, done.stdout) == (0, "done\n")
