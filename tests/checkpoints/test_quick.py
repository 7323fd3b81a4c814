"""Every checkpoint runs in quick mode, writes honest evidence, refuses to overwrite.

Checkpoint-specific contents are checked in each chapter's own test file; this
one holds every script to the shared contract in CONTRIBUTING.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from crashcourse.figures import evidence as timeline

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "checkpoints").glob("ch[0-9][0-9]_*.py"))
TIMEOUT = 240


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=TIMEOUT
    )


@pytest.fixture(scope="module", params=SCRIPTS, ids=lambda p: p.stem)
def quick_run(request, quick_checkpoint):
    script = request.param
    done = quick_checkpoint(script.stem)  # shared with the chapter's own tests
    return script, done.output, done


def test_quick_mode_holds(quick_run):
    script, output, done = quick_run
    assert done.returncode == 0, done.stderr[-2000:]
    evidence = json.loads(output.read_text())
    assert {"schema", "manifest", "summary", "trials"} <= set(evidence)
    assert evidence["trials"], "a checkpoint with no trials proves nothing"


def test_manifest_hashes_the_script_that_ran(quick_run):
    script, output, _ = quick_run
    hashes = json.loads(output.read_text())["manifest"]["sources_sha256"]
    assert hashes[f"script/{script.name}"] == hashlib.sha256(
        script.read_bytes()
    ).hexdigest()


def test_existing_output_is_refused_and_left_alone(quick_run):
    script, output, _ = quick_run
    before = output.read_bytes()
    again = run(str(script), "--quick", "--output", str(output))
    assert again.returncode != 0
    assert output.read_bytes() == before


def test_the_shared_skeleton_shows(quick_run):
    """crashcourse.lab.experiment: a verdict per trial, numbered progress, one
    closing line, and the summary's own timing and mode."""
    _, output, done = quick_run
    evidence = json.loads(output.read_text())
    trials = evidence["trials"]
    assert all(isinstance(t["holds"], bool) for t in trials)
    assert all(t["holds"] for t in trials), done.stderr[-2000:]
    assert not any("passed" in t for t in trials)  # one word for it: holds
    assert "[1/" in done.stderr
    assert f"[{len(trials)}/{len(trials)}] " in done.stderr
    assert f"{len(trials)}/{len(trials)} trials hold -> {output}" in done.stderr
    assert evidence["summary"]["quick"] is True
    assert evidence["summary"]["elapsed_s"] >= 0


def test_every_trial_records_instants_measured_in_the_run(quick_run):
    """The picture beside the evidence (``make checkpoints``, issue 32) is
    drawn from the instants each trial recorded: every trial has some, and
    each lies between the run's start and the evidence's writing, so it was
    read from the clock during the run (a literal or a planned time would
    fall outside, or leave the trial undrawn)."""
    _, output, _ = quick_run
    document = json.loads(output.read_text())
    written = document["manifest"]["created_unix"] + 0.01  # rounded to 1 ms
    began = written - document["summary"]["elapsed_s"] - 1.0  # its set-up, rounding
    undrawn = [timeline.trial_name(t, n) for n, t in enumerate(document["trials"], 1)
               if not timeline.trial_timeline(t)[1]]
    assert not undrawn, f"trials that record no instant to draw: {undrawn}"
    for n, trial in enumerate(document["trials"], start=1):
        lanes, events = timeline.trial_timeline(trial)
        # a lease's end is the expiry its row holds: it may lie past the run
        instants = [at for _, at, label in events if label != "lease ends"]
        instants += [start for _, start, _, _ in lanes]
        outside = [i for i in instants if not began <= i <= written]
        assert not outside, (f"{timeline.trial_name(trial, n)} records instants"
                             f" outside its run ({began:.3f} to {written:.3f}):"
                             f" {outside[:3]}")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_help_explains(script):
    done = run(str(script), "--help")
    assert done.returncode == 0
    for option in ("--output PATH", "--quick", "default"):
        assert option in done.stdout, option


@pytest.mark.parametrize("runner, argv", [
    *(("tools/run_checkpoints.py", argv) for argv in (["--bogus"], ["99"], ["05"],
                                                      ["6"])),
    *(("bench/run_all.py", argv) for argv in (["--bogus"], ["nope"], ["bench_dbos"])),
])
def test_a_runner_refuses_what_it_cannot_run_before_running_anything(
        tmp_path, runner, argv):
    """``make checkpoints CHAPTERS=...`` and ``make bench BENCHES=...``: an
    unknown name or option is one line and exit 2, and nothing runs (both
    once ignored their arguments and ran everything: hours of work)."""
    runner = subprocess.Popen(
        [sys.executable, str(ROOT / runner), *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        start_new_session=True)  # its group: a runner that starts one is stopped whole
    try:
        stdout, stderr = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None or group_left_running(runner):
            os.killpg(runner.pid, signal.SIGKILL)
            runner.communicate()
    assert runner.returncode == 2, stderr
    assert stderr.count("\n") == 1 and "error:" in stderr
    assert "==" not in stderr and stdout == ""  # nothing was started


def group_left_running(runner: subprocess.Popen) -> bool:
    """Whether anything of the runner's group outlived it (a checkpoint)."""
    try:
        os.killpg(runner.pid, 0)
    except ProcessLookupError:
        return False
    return True
