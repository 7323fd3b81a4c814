"""One error path for every worker (issue 35): what the machine refuses (a
file that is not a database, a full disk, a read-only mount, a dangling
symlink) and what the service answers (a key bound to another action) end a
worker in ONE line on stderr with its documented status, never a traceback:
74 for the machine, 2 for a store that is not the worker's own, 4 for a key
conflict (``paying.EXITS``). Each case is a real child process."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from crashcourse.lab.example import scan_files
from crashcourse.services import drive, mail, payments
from crashcourse.workers import options, paying


def run(module: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"crashcourse.workers.{module}",
                           *argv], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, cwd=cwd)


def one_line(done: subprocess.CompletedProcess, module: str, status: int) -> str:
    lines = done.stderr.splitlines()
    assert done.returncode == status, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"{module}.py: error: "), lines[0]
    return lines[0]


def scheduler(state: Path) -> subprocess.CompletedProcess:
    return run("scheduler", ["--state", str(state), "--name", "n", "--ticks", "1",
                             "--interval", "0"], state.parent)


def test_a_scheduler_state_that_is_not_a_database_is_one_line(tmp_path):
    state = tmp_path / "state.sqlite"
    state.write_bytes(b"this is somebody's notes, not a database\n" * 200)
    before = state.read_bytes()
    assert "not a store" in one_line(scheduler(state), "scheduler",
                                     options.BAD_INPUT)
    assert state.read_bytes() == before


def test_a_scheduler_state_that_is_a_dangling_symlink_is_one_line(tmp_path):
    state = tmp_path / "state.sqlite"
    state.symlink_to(tmp_path / "gone.sqlite")
    one_line(scheduler(state), "scheduler", options.BAD_INPUT)
    assert not (tmp_path / "gone.sqlite").exists()


@contextmanager
def tiny_mount(folder: Path, size: str):
    """A tmpfs of ``size`` on ``folder`` (root only; else skip)."""
    folder.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                           str(folder)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_scheduler_on_a_full_disk_is_one_line_and_74(tmp_path):
    with tiny_mount(tmp_path / "full", "64k") as folder:
        (folder / "filler").write_bytes(b"x" * 64 * 1024)
        state = folder / "state.sqlite"
        line = one_line(scheduler(state), "scheduler", options.IO_ERROR)
        assert "the machine refused" in line
        assert not state.exists()  # nothing half made left behind


def test_a_wedged_worker_on_a_read_only_mount_is_one_line_and_74(tmp_path):
    with tiny_mount(tmp_path / "ro", "4m") as folder:
        drive.install(folder / "drive.sqlite", scan_files(2))
        mail.install(folder / "mail.sqlite")
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        done = run("wedged_worker", [
            "--drive", str(folder / "drive.sqlite"),
            "--mail", str(folder / "mail.sqlite"), "--credential", "token",
            "--limit", "2", "--pace", "0"], tmp_path)
        one_line(done, "wedged_worker", options.IO_ERROR)
        subprocess.run(["mount", "-o", "remount,rw", str(folder)], check=True)
        assert drive.names(folder / "drive.sqlite") == scan_files(2)


@pytest.mark.parametrize("module", ["charge", "charge_read_first"])
def test_a_key_conflict_is_exit_4_for_both_charges(tmp_path, module):
    service = tmp_path / "payments.sqlite"
    payments.install(service)
    payments.approve(service, "SUP-1", 4000, "USD")
    payments.approve(service, "SUP-2", 4000, "USD")

    def charge(order: str, state: str) -> subprocess.CompletedProcess:
        return run(module, ["--payments", str(service), "--state",
                            str(tmp_path / state), "--task", "t", "--key", "k-1",
                            "--order", order, "--amount", "4000", "--currency",
                            "USD"], tmp_path)

    assert charge("SUP-1", "a.sqlite").returncode == 0
    done = charge("SUP-2", "b.sqlite")  # the same key, another action
    assert done.returncode == paying.EXITS["conflict"] == 4, done.stderr
    assert "Traceback" not in done.stderr
    assert [p["order_id"] for p in payments.snapshot(service)["payments"]] == ["SUP-1"]


@pytest.mark.parametrize("url", ["http://127.0.0.1:abc", "http://127.0.0.1:99999",
                                 "http://127.0.0.1:80 x"])
def test_a_workflow_worker_url_with_a_bad_port_is_refused_before_any_write(
        tmp_path, url):
    """Issue 35: ``--url http://127.0.0.1:abc`` passed the worker's own check
    (``urlsplit`` accepts it), the reserve attempt was written, then
    http.client's ``InvalidURL`` was a traceback. Now ``validate.check_url``:
    one line, exit 2, every file byte for byte as it was."""
    from crashcourse.workers.workflow_worker import build_world

    (tmp_path / "w").mkdir()
    world = build_world(str(tmp_path / "w"))
    files = sorted((tmp_path / "w").iterdir())
    before = [path.read_bytes() for path in files]
    done = run("workflow_worker", ["--dir", str(tmp_path / "w"), "--workflow",
                                   world["workflow_id"], "--who", "w", "--url", url],
               tmp_path)
    assert "--url" in one_line(done, "workflow_worker", options.BAD_INPUT)
    assert sorted((tmp_path / "w").iterdir()) == files
    assert [path.read_bytes() for path in files] == before
