"""Shared fixtures: each checkpoint's quick run happens once per test session,
and a real supplier server process per test module that asks for one.

Several test files read the evidence of the same quick run (the shared contract
in test_checkpoints_quick.py, and each chapter's own checks). The run costs
dozens of real processes, so it is made once and shared, also across pytest-xdist
workers: a lock file in the session's common temp folder decides who runs it.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest

from crashcourse.book import CheckpointRun, start_checkpoint
from crashcourse.harness import Harness
from crashcourse.services import start_supplier


def shared_dir(tmp_path_factory, worker_id: str) -> Path:
    base = tmp_path_factory.getbasetemp()
    root = base if worker_id == "master" else base.parent  # common to all workers
    folder = root / "quick-checkpoints"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def quick_checkpoint(tmp_path_factory, worker_id):
    """``quick_checkpoint("ch02_recovery_study")`` → the session's CheckpointRun
    of ``--quick`` (``crashcourse.book.start_checkpoint``)."""
    folder = shared_dir(tmp_path_factory, worker_id)

    def run(name: str) -> CheckpointRun:
        output, record = folder / f"{name}.json", folder / f"{name}.run.json"
        with open(folder / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits, then reads
            if not record.exists():
                done = start_checkpoint(name, "--quick", output=output)
                record.write_text(json.dumps({"returncode": done.returncode,
                                              "stdout": done.stdout,
                                              "stderr": done.stderr}))
        ran = json.loads(record.read_text())
        return CheckpointRun(ran["returncode"], ran["stdout"], ran["stderr"], output)

    return run


@pytest.fixture(scope="module")
def supplier(tmp_path_factory):
    """A real supplier HTTP server process, stopped (and reaped) after the module."""
    db = tmp_path_factory.mktemp("s") / "sup.db"
    with Harness() as harness, start_supplier(harness, db) as running:
        yield running
