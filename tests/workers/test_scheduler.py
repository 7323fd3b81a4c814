"""The scheduler stays stopped (chapter 09), with real scheduler processes.

Whatever stops the runs must also stop what restarts them: the switch lives
in the runtime's file, so killing the scheduler and starting it again starts
nothing while the switch says stopped, and nothing at all on a file where
nobody has ever said "run". Counted from the ``runs`` rows.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from crashcourse import control
from crashcourse.lab.harness import Harness
from crashcourse.store import StoreMissing, opened
from crashcourse.waiting import wait_until
from crashcourse.workers.scheduler import TICKS, ticks_of

SCHEDULER = ["-m", "crashcourse.workers.scheduler"]
WAIT = 60.0  # seconds: bounded, with margin for a loaded machine


def scheduler(state, name: str, ticks: int = 10_000, interval: float = 0.01):
    return [*SCHEDULER, "--state", str(state), "--name", name,
            "--ticks", str(ticks), "--interval", str(interval)]


def ticks(state, name: str, since: float = float("-inf")) -> list[dict]:
    """The scheduler's tick rows, read without creating its file: a poll
    that runs before the scheduler has made its store must not make one
    (issue 36: under load a poll created the file, the scheduler found it 0
    bytes long, refused it with exit 2, and the wait for ticks ran out)."""
    try:
        with opened(state, require=(TICKS,)) as conn:
            return ticks_of(conn, name, since)
    except StoreMissing:
        return []


def runs(state) -> list[dict]:
    with opened(state) as conn:
        return control.snapshot(conn)["runs"]


def test_a_scheduler_nobody_started_starts_nothing(tmp_path):
    state = tmp_path / "runtime.sqlite"
    with Harness() as harness:
        finished = harness.run(scheduler(state, "first", ticks=20))
    assert finished.returncode == 0, finished.stderr
    assert runs(state) == []


def test_a_stop_outlives_the_scheduler_process(tmp_path):
    state = tmp_path / "runtime.sqlite"
    with opened(state) as conn:
        control.start_scheduler(conn, "sam")
    with Harness() as harness:
        first = harness.start(scheduler(state, "first"))
        wait_until(lambda: len(runs(state)) >= 3, WAIT, what="three runs")
        with opened(state) as conn:
            control.stop_scheduler(conn, "sam", "run 122 went wrong")
            stopped_at = control.snapshot(conn)["scheduler_switch"][-1]["at"]
        # the first scheduler ticks on, stopped: three ticks recorded after
        # the stop, counted from its rows (issue 36: was a 0.2 s sleep, which
        # under load can hold no tick at all)
        wait_until(lambda: len(ticks(state, "first", stopped_at)) >= 3, WAIT,
                   what="three ticks of the first scheduler after the stop")
        first.kill()
        again = harness.run(scheduler(state, "second", ticks=20))
        assert again.returncode == 0, again.stderr
        assert [r for r in runs(state) if r["started_at"] >= stopped_at] == []
        with opened(state) as conn:
            restarted = control.start_scheduler(conn, "sam", "run 122 understood")
        third = harness.run(scheduler(state, "third", ticks=5))
    assert third.returncode == 0, third.stderr
    after = [r for r in runs(state) if r["started_at"] >= stopped_at]
    assert [(r["scheduler"], r["allowed_by"]) for r in after] == [
        ("third", restarted)] * 5


def test_a_poll_before_the_scheduler_made_its_file_makes_none(tmp_path):
    """The reader the tests poll with leaves a missing store missing; a
    reader that made the file would race the scheduler's start (the 0-byte
    file it finds is refused: exit 2, below)."""
    state = tmp_path / "runtime.sqlite"
    assert ticks(state, "told") == []
    assert not state.exists(), "a poll for ticks created the scheduler's file"
    state.touch()  # what a creating reader leaves for a moment: 0 bytes
    with Harness() as harness:
        refused = harness.run(scheduler(state, "told", ticks=3))
    assert refused.returncode == 2, (
        f"the scheduler took a 0-byte file as its store: {refused.stderr}")


def test_sigterm_ends_the_scheduler_after_its_tick(tmp_path):
    state = tmp_path / "runtime.sqlite"
    with Harness() as harness:
        worker = harness.start(scheduler(state, "told", interval=0.05))
        wait_until(lambda: len(ticks(state, "told")) >= 3, WAIT,
                   what="three ticks")  # it is mid-run: no sleep decides that
        os.killpg(worker.pid, signal.SIGTERM)  # our own child's group
        finished = worker.finish()
    assert finished.returncode == 0, finished.stderr
    said = json.loads(finished.stdout)
    recorded = ticks(state, "told")
    assert said == {"ticks": len(recorded), "started": 0}  # every tick it did
    assert [t["tick"] for t in recorded] == list(range(1, len(recorded) + 1))
    assert {t["run_id"] for t in recorded} == {None}


def test_every_tick_is_recorded_with_the_run_it_started(tmp_path):
    """The tick rows tests wait for say what each tick did: the run it
    started while the switch said running, none once it said stopped."""
    state = tmp_path / "runtime.sqlite"
    with opened(state) as conn:
        control.start_scheduler(conn, "sam")
    with Harness() as harness:
        assert harness.run(scheduler(state, "a", ticks=4)).returncode == 0
        with opened(state) as conn:
            control.stop_scheduler(conn, "sam", "enough")
        assert harness.run(scheduler(state, "b", ticks=3)).returncode == 0
    started = [r["run_id"] for r in runs(state)]
    assert [t["run_id"] for t in ticks(state, "a")] == started and len(started) == 4
    assert [t["run_id"] for t in ticks(state, "b")] == [None] * 3


@pytest.mark.parametrize("extra", [["--ticks", "0"], ["--ticks", "x"],
                                   ["--interval", "-1"], ["--bogus", "1"]])
def test_bad_usage_exits_2_and_writes_nothing(tmp_path, extra):
    state = tmp_path / "runtime.sqlite"
    done = subprocess.run([sys.executable, *scheduler(state, "bad")[:5], *extra],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage" in done.stderr
    assert not state.exists()
