"""The kill harness (chapter 00, used by chapter 02): bounded, owned, tidy."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from crashcourse.boundary import (
    HOLD_EXPIRED,
    HOLD_SECONDS,
    HOLD_SECONDS_ENV,
    hold_seconds,
)
from crashcourse.lab import harness as harness_module
from crashcourse.lab import processes
from crashcourse.lab.harness import (
    BoundaryNotReached,
    BoundaryTimeout,
    Harness,
    kill_and_resume,
)
from crashcourse.services import payments
from crashcourse.store import opened
from crashcourse.waiting import wait_until
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
        trial = kill_and_resume(harness, args, "after_payment", counts, timeout=60)
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


# --- the worker's whole process group ------------------------------------------

FORKING = Path(__file__).parent / "programs" / "forking_worker.py"
CHILD_MARK = "crashcourse-test-grandchild"  # as tests/lab/programs/forking_worker.py


def running(pid: int) -> bool:
    """Alive and not a zombie: a killed orphan may wait as a zombie for PID 1."""
    return not processes.gone(pid)


def settled(pid: int, timeout: float = 30.0) -> bool:
    """Whether ``pid`` stops running within ``timeout`` s (bounded poll), for
    a process another parent was told to end."""
    try:
        processes.wait_gone(pid, timeout)
    except TimeoutError:
        return False
    return True


def group_left(pgid: int) -> list[int]:
    """Pids still running in process group ``pgid``."""
    return [pid for pid in processes.group_members(pgid) if running(pid)]


def kill_if_ours(child: int) -> None:
    """SIGKILL the test worker's child if a test left it running (its command
    line carries the mark, so a reused pid is never signalled)."""
    if running(child) and CHILD_MARK.encode() in Path(
            f"/proc/{child}/cmdline").read_bytes():
        os.kill(child, signal.SIGKILL)


@contextmanager
def forking_worker(harness: Harness, tmp_path: Path, *extra: str):
    """A worker held at ``child_started`` and its child's pid. Whatever the test
    asserts, the child is killed afterwards if it still runs."""
    pid_file = tmp_path / "child.pid"
    worker = harness.start([str(FORKING), str(pid_file), *extra],
                           stop_at="child_started")
    child = None
    try:
        worker.wait_for_boundary(timeout=30)
        child = int(pid_file.read_text())
        assert running(child), "the worker's child should be running here"
        yield worker, child
    finally:
        if child is not None:
            kill_if_ours(child)


def test_a_kill_at_a_boundary_takes_the_workers_own_children_too(tmp_path):
    with Harness() as harness, forking_worker(harness, tmp_path) as (worker, child):
        finished = worker.kill()
        assert finished.returncode == -signal.SIGKILL
        assert not running(child), "the worker's child outlived the kill"
        assert group_left(worker.pid) == []


def test_a_child_holding_the_pipes_does_not_hold_up_the_kill(tmp_path, monkeypatch):
    # The child inherits stdout and stderr: killing the worker alone would
    # leave them open and the collection waiting (bounded here at 5 s).
    monkeypatch.setattr(harness_module, "DEFAULT_TIMEOUT", 5.0)
    with Harness() as harness, \
            forking_worker(harness, tmp_path, "--keep-pipes") as (worker, child):
        started = time.monotonic()
        assert worker.kill().returncode == -signal.SIGKILL
        assert time.monotonic() - started < 4.0
        assert not running(child)  # read at once: the kill is done
        assert group_left(worker.pid) == []


def test_leaving_the_block_takes_a_held_workers_children_too(tmp_path):
    with Harness() as harness, forking_worker(harness, tmp_path) as (worker, child):
        with pytest.raises(AssertionError, match="inside the block"):
            with harness:
                raise AssertionError("failed inside the block")
        assert worker.finished.returncode == -signal.SIGKILL
        assert not running(child), "cleanup left the worker's child running"
        assert group_left(worker.pid) == []


def test_a_boundary_timeout_takes_the_workers_children_too(tmp_path):
    pid_file = tmp_path / "child.pid"
    with Harness() as harness:
        worker = harness.start([str(FORKING), str(pid_file), "--hang"],
                               stop_at="child_started")
        # its child is started: now let the wait run out
        wait_until(pid_file.exists, 30, interval=0.01, what="the child's pid file")
        child = int(pid_file.read_text())
        try:
            with pytest.raises(BoundaryTimeout):
                worker.wait_for_boundary(timeout=0.2)
            assert not running(child), "the timeout's kill left the worker's child"
            assert group_left(worker.pid) == []
        finally:
            kill_if_ours(child)


# --- what the harness promises the code that drives it -------------------------

HOLDS = ["-c", "from crashcourse.boundary import boundary;"
         " boundary('after_payment'); print('went on')"]


def test_kill_reports_a_worker_that_was_not_killed_by_it():
    with Harness() as harness:
        worker = harness.start(["-c", "pass"])
        worker.process.wait(timeout=30)  # it ended on its own, status 0
        with pytest.raises(AssertionError, match="-9"):
            worker.kill()


def test_a_marker_for_another_boundary_is_not_taken_for_the_one_asked():
    code = ("import os, time; os.write(int(os.environ['CRASHCOURSE_MARKER_FD']),"
            " b'before_payment\\n'); time.sleep(60)")
    with Harness() as harness:
        worker = harness.start(["-c", code], stop_at="after_payment")
        with pytest.raises(BoundaryNotReached):
            worker.wait_for_boundary(timeout=30)
        assert gone(worker.pid)


def test_a_stop_asked_of_the_harness_process_never_reaches_its_workers(monkeypatch):
    # The harness itself runs under a stop request (a nested experiment): a
    # worker started without stop_at must run straight through its boundary.
    monkeypatch.setenv(harness_module.STOP_AT_ENV, "after_payment")
    with Harness() as harness:
        done = harness.run(HOLDS, timeout=30)
    assert (done.returncode, done.stdout) == (0, "went on\n")


def test_the_harness_passes_its_own_environment_on():
    with Harness(env={"CRASHCOURSE_TEST_MARK": "seen"}) as harness:
        code = "import os; print(os.environ['CRASHCOURSE_TEST_MARK'])"
        done = harness.run(["-c", code], timeout=30)
    assert done.stdout == "seen\n"


def test_a_held_worker_whose_parent_lets_go_of_it_never_goes_on():
    # The parent closes its end of the control pipe: the worker must exit with
    # HOLD_EXPIRED, not carry on as if released.
    with Harness() as harness:
        worker = harness.start(HOLDS, stop_at="after_payment")
        worker.wait_for_boundary(timeout=30)
        os.close(worker.control_fd)
        worker.control_fd = None
        done = worker.finish(timeout=30)
    assert (done.returncode, done.stdout) == (HOLD_EXPIRED, "")


def test_the_hold_s_bound_is_the_harness_s_to_set(monkeypatch):
    # Nobody releases, closes or kills it: the worker ends HOLD_EXPIRED after
    # the bound its parent's environment set (0.2 s), well inside the 10 s
    # finish() allows; a worker that ignored it would hold 30 s and fail here.
    monkeypatch.delenv(HOLD_SECONDS_ENV, raising=False)
    assert hold_seconds() == HOLD_SECONDS == 30.0  # the default, unchanged
    with Harness(env={HOLD_SECONDS_ENV: "0.2"}) as harness:
        worker = harness.start(HOLDS, stop_at="after_payment")
        worker.wait_for_boundary(timeout=30)
        done = worker.finish(timeout=10)
    assert (done.returncode, done.stdout) == (HOLD_EXPIRED, "")


@pytest.mark.parametrize("bound", ["0", "-1", "nan", "inf", "soon"])
def test_a_bad_hold_bound_is_refused_before_the_boundary_is_announced(bound):
    with Harness(env={HOLD_SECONDS_ENV: bound}) as harness:
        worker = harness.start(HOLDS, stop_at="after_payment")
        with pytest.raises(BoundaryNotReached, match=HOLD_SECONDS_ENV):
            worker.wait_for_boundary(timeout=30)


def test_kill_and_resume_reads_between_the_kill_and_the_replacement(tmp_path):
    # Order of events: kill, snapshot, ``between``, replacement (with its own
    # arguments), final snapshot.
    log = tmp_path / "log"
    first = ["-c", "from crashcourse.boundary import boundary;"
             " boundary('after_payment')"]
    resume = ["-c", f"open({str(log)!r}, 'a').write('replacement\\n')"]

    def note(what: str):
        with log.open("a") as handle:
            handle.write(what + "\n")
        return log.read_text().splitlines()

    with Harness() as harness:
        trial = kill_and_resume(harness, first, "after_payment",
                                lambda: note("snapshot"), resume_args=resume,
                                timeout=30, between=lambda: note("between"))
    assert trial.snapshot_at_interruption == ["snapshot"]
    assert trial.final_snapshot == ["snapshot", "between", "replacement", "snapshot"]
    assert trial.resumed_returncode == 0


# --- boundaries heard in-process ------------------------------------------------


def test_an_observer_hears_every_boundary_in_order_and_only_in_its_block():
    from crashcourse.boundary import boundary, observing

    heard: list[str] = []
    with observing(heard.append):
        boundary("before_payment")
        boundary("after_payment")
    boundary("after_checkpoint")  # the block is over: nobody listens
    assert heard == ["before_payment", "after_payment"]


def test_an_observer_has_heard_the_boundary_a_worker_is_killed_at(tmp_path):
    # What an observer notes must be on record before the worker holds there.
    heard = tmp_path / "heard"
    code = ("from crashcourse.boundary import boundary, observing\n"
            f"note = lambda name: open({str(heard)!r}, 'a').write(name + '\\n')\n"
            "with observing(note):\n"
            "    boundary('before_payment')\n"
            "    boundary('after_payment')\n"
            "    boundary('after_checkpoint')\n")
    with Harness() as harness:
        worker = harness.start(["-c", code], stop_at="after_payment")
        worker.wait_for_boundary(timeout=30)
        worker.kill()
    assert heard.read_text().splitlines() == ["before_payment", "after_payment"]


def wait_exited(pid: int, timeout: float = 30.0) -> None:
    """Block (bounded) until ``pid`` has exited, without reaping it."""
    exited = os.pidfd_open(pid)  # readable once it has exited
    try:
        assert select.select([exited], [], [], timeout)[0], f"{pid} never ended"
    finally:
        os.close(exited)


def test_a_worker_that_exits_before_its_boundary_leaves_no_child_behind(tmp_path):
    # Asked to stop at a boundary it never reaches, the worker starts its child
    # and exits; the harness reports it and kills what it left in its group.
    pid_file = tmp_path / "child.pid"
    with Harness() as harness:
        worker = harness.start([str(FORKING), str(pid_file)], stop_at="after_payment")
        wait_exited(worker.pid)
        with pytest.raises(BoundaryNotReached):
            worker.wait_for_boundary(timeout=30)
        child = int(pid_file.read_text())
        try:
            assert worker.finished.returncode == 0  # it ended on its own
            assert not running(child), "the exited worker's child was left running"
            assert group_left(worker.pid) == []
        finally:
            kill_if_ours(child)


def test_leaving_the_block_takes_the_children_of_a_worker_that_exited(tmp_path):
    pid_file = tmp_path / "child.pid"
    with Harness() as harness:
        worker = harness.start([str(FORKING), str(pid_file)])
        wait_exited(worker.pid)
    child = int(pid_file.read_text())
    try:
        assert worker.finished.returncode == 0
        assert not running(child), "cleanup left the exited worker's child running"
    finally:
        kill_if_ours(child)


def process_state(pid: int) -> str | None:
    """The one-letter state the kernel shows for ``pid`` (T: stopped)."""
    return processes.state(pid)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_frozen_worker_is_stopped_not_dead_and_goes_on_when_thawed(tmp_path):
    ticks = tmp_path / "ticks"
    counter = ["-c", "import time, sys\n"
               f"for i in range(400):\n open({str(ticks)!r}, 'a').write('.')\n"
               " time.sleep(0.01)"]
    with Harness() as harness:
        worker = harness.start(counter)
        wait_until(ticks.exists, 30, interval=0.01, what="the worker's first tick")
        worker.freeze()  # returns once the kernel shows it stopped (T)
        assert process_state(worker.pid) == "T"  # stopped by SIGSTOP, not gone
        frozen_at = ticks.stat().st_size  # a write under way finished before T
        # No window of time decides "it wrote nothing": the kernel's state
        # does. Still T after the read (nothing here sends SIGCONT before
        # thaw), so it could not run between the two reads of its file.
        assert process_state(worker.pid) == "T"
        assert ticks.stat().st_size == frozen_at
        worker.thaw()
        wait_until(lambda: ticks.stat().st_size > frozen_at, 30, interval=0.01,
                   what="a tick after the thaw")
        assert ticks.stat().st_size > frozen_at  # it went on where it stopped
    assert gone(worker.pid)  # leaving the block kills a worker, frozen or not


def test_leaving_the_block_kills_a_worker_left_frozen():
    with Harness() as harness:
        worker = harness.start(SLEEPER)
        worker.freeze()
    assert worker.process.returncode == -signal.SIGKILL
    assert gone(worker.pid)


def test_an_exited_worker_cannot_be_frozen():
    with Harness() as harness:
        worker = harness.start(["-c", "pass"])
        worker.finish()
        with pytest.raises(RuntimeError, match="exited"):
            worker.freeze()


def test_a_worker_that_exits_before_its_boundary_says_why_in_the_error():
    """The evidence of a trial that never reached its kill point keeps the
    worker's last words, so a failed trial names its cause."""
    script = ["-c", "import sys; sys.stderr.write('refused: the lease ran out\\n');"
              " sys.exit(5)"]
    with Harness() as harness:
        worker = harness.start(script, stop_at="after_payment")
        with pytest.raises(BoundaryNotReached) as raised:
            worker.wait_for_boundary(timeout=30)
    assert "exit 5" in str(raised.value)
    assert "refused: the lease ran out" in str(raised.value)


PARENT = """
import pathlib, sys, time
from crashcourse.lab.harness import Harness
with Harness() as harness:
    worker = harness.start(["-c", "import time; time.sleep(120)"])
    pathlib.Path(sys.argv[1]).write_text(str(worker.pid))
    time.sleep(120)
"""


def test_a_parent_stopped_by_sigterm_leaves_no_worker_behind(tmp_path):
    """``timeout`` or ``kill`` sends SIGTERM to a checkpoint: its ``with
    Harness()`` block unwinds and kills its workers' groups, instead of dying
    at once and leaving a supplier running with nobody to stop it."""
    told = tmp_path / "worker.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(told)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    pid = None
    try:
        wait_until(told.exists, 60, what="the parent's worker")
        wait_until(told.read_text, 30, what="its pid written")
        pid = int(told.read_text())
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(60) == 128 + signal.SIGTERM, parent.stderr.read()
        assert settled(pid, 30), "the worker outlived its parent"
    finally:
        if parent.poll() is None:
            os.killpg(parent.pid, signal.SIGKILL)
            parent.wait(60)
        if pid is not None and running(pid):
            os.killpg(pid, signal.SIGKILL)  # a worker is its own group's leader
        parent.stderr.close()

