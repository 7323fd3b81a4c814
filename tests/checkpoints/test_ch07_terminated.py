"""Chapter 07's campaign with ``--jobs 2`` stopped by SIGTERM leaves nothing
(issue 35). With two jobs every trial's ``Harness`` is made in a pool thread,
where no signal handler can be set, so SIGTERM killed the run at once: its
trial folders (journal, drive and mail files) stayed in TMPDIR, and a worker
mid-trial ran on. Now SIGTERM raises in the main thread: the trials running
finish, the rest never start, every folder is removed, the status is 143.
The SIGTERM is sent once the first trial has ended (its progress line)."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "checkpoints" / "ch07_random_kill_campaign.py"


def first_line_with(process: subprocess.Popen, word: str, bound: float) -> str:
    """The first line of stderr or stdout naming ``word``, within ``bound`` s."""
    chooser = selectors.DefaultSelector()
    for stream in (process.stdout, process.stderr):
        os.set_blocking(stream.fileno(), False)
        chooser.register(stream, selectors.EVENT_READ)
    deadline, seen = time.monotonic() + bound, {process.stdout: "", process.stderr: ""}
    while time.monotonic() < deadline and process.poll() is None:
        for key, _ in chooser.select(0.2):
            seen[key.fileobj] += key.fileobj.read() or ""
            for line in seen[key.fileobj].splitlines():
                if word in line:
                    return line
    raise AssertionError(f"no line with {word!r} within {bound} s: {seen}")


def test_a_sigterm_with_two_jobs_leaves_no_trial_folder(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--trials", "20", "--jobs", "2",
         "--output", str(tmp_path / "evidence.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(scratch)})
    try:
        first_line_with(run, "[1/20]", 240)
        assert any(scratch.iterdir())  # trials under way: their folders are there
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=120)  # the two trials running finish, no more start
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(timeout=30)
    assert run.returncode == 128 + signal.SIGTERM
    assert list(scratch.iterdir()) == []
    assert not (tmp_path / "evidence.json").exists()
