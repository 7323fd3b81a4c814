"""crashcourse.waiting: the one bounded wait (issue 21).

The clock is a stand-in here, so nothing depends on how loaded the machine
is: ``sleep`` moves the stand-in's time on and ``monotonic`` reads it."""

from __future__ import annotations

import math
import sqlite3

import pytest

from crashcourse import waiting
from crashcourse.waiting import wait_until


class Clock:
    """Monotonic time that moves only when the waiter sleeps."""

    def __init__(self):
        self.now, self.slept = 1000.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(waiting.time, "monotonic", fake.monotonic)
    monkeypatch.setattr(waiting.time, "sleep", fake.sleep)
    return fake


class Asked:
    """A predicate that answers from a script and counts how often it was
    asked; past ``limit`` asks it fails the test instead of looping for ever
    (an unbounded wait would otherwise hang the suite)."""

    def __init__(self, answers=(), limit: int = 10_000):
        self.answers, self.limit, self.times = list(answers), limit, 0

    def __call__(self):
        self.times += 1
        assert self.times <= self.limit, "the wait never gave up"
        return self.answers.pop(0) if self.answers else None


def test_returns_the_first_true_answer(clock):
    asked = Asked([None, 0, [], {"rows": 3}])
    assert wait_until(asked, 10, what="three rows") == {"rows": 3}
    assert asked.times == 4 and clock.slept == [waiting.INTERVAL] * 3


def test_a_true_answer_at_once_never_sleeps(clock):
    assert wait_until(lambda: True, 0, what="nothing") is True
    assert clock.slept == []


def test_gives_up_after_the_timeout_and_names_what_it_waited_for(clock):
    asked = Asked()
    with pytest.raises(TimeoutError) as gave_up:
        wait_until(asked, 1.0, interval=0.25, what="the supplier's ready file")
    assert str(gave_up.value) == "never saw the supplier's ready file within 1 s"
    assert sum(clock.slept) == pytest.approx(1.0)  # bounded: not a moment more
    assert asked.times == 5  # at 0, 0.25, 0.5, 0.75 and at the deadline


def test_the_last_sleep_is_cut_to_the_deadline(clock):
    with pytest.raises(TimeoutError):
        wait_until(Asked(), 1.0, interval=0.3, what="a row")
    assert clock.slept == pytest.approx([0.3, 0.3, 0.3, 0.1])


def test_true_at_the_deadline_is_seen(clock):
    asked = Asked([None, None, "ready"])
    assert wait_until(asked, 1.0, interval=0.5, what="ready") == "ready"
    assert clock.now == pytest.approx(1001.0)


def test_the_predicate_s_own_error_is_not_a_not_yet(clock):
    def broken():
        raise sqlite3.OperationalError("no such table: runs")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        wait_until(broken, 60, what="three runs")
    assert clock.slept == []  # not retried until the timeout either


def test_a_predicate_raising_timeout_error_is_its_own(clock):
    def broken():
        raise TimeoutError("the predicate's own")

    with pytest.raises(TimeoutError, match="the predicate's own"):
        wait_until(broken, 60, what="anything")


@pytest.mark.parametrize("timeout", [math.inf, math.nan, -1])
def test_an_unbounded_or_negative_timeout_is_refused(timeout, clock):
    with pytest.raises(ValueError, match="timeout"):
        wait_until(Asked(), timeout, what="anything")


@pytest.mark.parametrize("interval", [0, -0.1, math.inf, math.nan])
def test_an_interval_that_is_no_pause_or_no_end_is_refused(interval, clock):
    with pytest.raises(ValueError, match="interval"):
        wait_until(Asked(), 1, interval=interval, what="anything")


def test_with_the_real_clock_it_ends(tmp_path):
    flag = tmp_path / "never"
    with pytest.raises(TimeoutError, match="the flag file"):
        wait_until(flag.exists, 0.05, interval=0.01, what="the flag file")
    flag.touch()
    assert wait_until(flag.exists, 0.05, what="the flag file") is True


# The waits built on it: each gives up at once on a process that has ended,
# and says why, instead of waiting out its bound.


def test_a_supplier_that_exits_is_reported_at_once_with_why(tmp_path):
    from crashcourse.lab.harness import Harness
    from crashcourse.services.supplier.process import start_supplier

    with Harness() as harness:
        with pytest.raises(RuntimeError) as refused:
            start_supplier(harness, tmp_path / "missing" / "sup.db", timeout=60)
        [worker] = harness.workers
        assert not worker.alive()  # reaped, not left to the harness
    assert "supplier exited (2) before it was ready" in str(refused.value)
    assert "not a file in an existing directory" in str(refused.value)


def test_a_supplier_that_never_gets_ready_is_stopped_at_the_bound(tmp_path,
                                                                    monkeypatch):
    from crashcourse.lab.harness import Harness
    from crashcourse.services.supplier.process import start_supplier

    with Harness() as harness:
        monkeypatch.setattr(harness, "start", lambda args, stop_at=None: (
            Harness.start(harness, ["-c", "import time; time.sleep(120)"])))
        with pytest.raises(RuntimeError, match="did not become ready within 0.3 s"):
            start_supplier(harness, tmp_path / "sup.db", timeout=0.3)
        [worker] = harness.workers
        assert not worker.alive()


def test_a_postgres_that_exited_is_said_at_once_with_its_log(tmp_path, clock):
    import subprocess
    import sys

    from crashcourse.store import postgres_server

    (tmp_path / "server.log").write_text("FATAL: the log's last words\n")
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
    process.wait()  # it has exited before anyone looks
    postgres_server._STARTED[process.pid] = process
    with pytest.raises(postgres_server.ServerUnavailable, match="last words"):
        postgres_server._wait_ready(process, tmp_path / "data", tmp_path, 60)
    assert clock.slept == []  # not waited out: the exit was seen at the first look


def test_a_postgres_that_never_gets_ready_is_halted_at_the_bound(tmp_path):
    import subprocess
    import sys

    from crashcourse.store import postgres_server

    (tmp_path / "server.log").write_text("LOG: still starting\n")
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    postgres_server._STARTED[process.pid] = process
    try:
        with pytest.raises(postgres_server.ServerUnavailable, match="still starting"):
            postgres_server._wait_ready(process, tmp_path / "data", tmp_path, 0.3)
        assert process.poll() is not None  # halted and reaped
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
