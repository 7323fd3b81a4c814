"""What a killed run leaves of its PostgreSQL server is removed by the next
(issue 35). A chapter 10 checkpoint killed by SIGKILL runs no clean-up: its
server stops (told to when its parent dies), but its cluster, about 1,140
files, stayed in TMPDIR for good. Now every folder ``start`` makes carries
a marker naming its maker; the next ``start`` removes those whose maker is
gone and whose server is not running, and says so; nothing else is touched.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from crashcourse.store import postgres_server as pgs
from crashcourse.waiting import wait_until


def folder(where, name: str, owner: dict | None) -> str:
    made = where / name
    (made / "data").mkdir(parents=True)
    if owner is not None:
        (made / pgs.MARKER).write_text(json.dumps(owner))
    return str(made)


def gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    return child.pid


def test_only_our_folders_whose_maker_is_gone_are_removed(tmp_path, capfd):
    me = {"pid": os.getpid(), "started": pgs._started(os.getpid())}
    dead = folder(tmp_path, pgs.PREFIX + "dead", {"pid": gone_pid(), "started": 1})
    reused = folder(tmp_path, pgs.PREFIX + "reused",  # our pid, another start
                    {"pid": os.getpid(), "started": me["started"] - 1})
    live = folder(tmp_path, pgs.PREFIX + "live", me)
    unmarked = folder(tmp_path, pgs.PREFIX + "unmarked", None)
    other = folder(tmp_path, "someone-else", {"pid": gone_pid(), "started": 1})
    serving = folder(tmp_path, pgs.PREFIX + "serving",
                     {"pid": gone_pid(), "started": 1})
    with open(os.path.join(serving, "data", "postmaster.pid"), "w") as pid:
        pid.write(f"{os.getpid()}\n")  # a server still running there
    assert sorted(pgs.remove_leftovers(str(tmp_path))) == sorted([dead, reused])
    said = capfd.readouterr().err.splitlines()
    assert len(said) == 2 and all("left by a killed run" in line for line in said)
    assert [os.path.isdir(f) for f in (dead, reused, live, unmarked, other,
                                       serving)] == [False, False, True, True,
                                                     True, True]


KILLED = """
import sys, time
from crashcourse.store import postgres_server as pgs
server = pgs.start()
print(server.folder, server.pid, flush=True)
time.sleep(120)  # until the test kills it
"""


@pytest.fixture
def reachable_tmp():
    """A TMPDIR of this test's own that the server's user (root runs it as
    another) can reach: pytest's ``tmp_path`` sits in a 0700 folder."""
    made = tempfile.mkdtemp(prefix="leftovers-")
    os.chmod(made, 0o755)
    yield Path(made)
    shutil.rmtree(made, ignore_errors=True)


def test_a_cluster_a_sigkilled_run_left_is_removed_by_the_next_start(
        reachable_tmp):
    if pgs.binaries() is None:
        pytest.skip("no PostgreSQL binaries (pip install pgserver)")
    tmp_path = reachable_tmp
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    run = subprocess.Popen([sys.executable, "-c", KILLED], env=env,
                           stdout=subprocess.PIPE, text=True)
    try:
        left, postmaster = run.stdout.readline().split()
    finally:
        run.kill()  # SIGKILL: no clean-up runs
        run.wait(timeout=30)
    assert run.returncode == -signal.SIGKILL
    wait_until(lambda: pgs._started(int(postmaster)) is None, 30,
               what="the killed run's server to stop")
    assert os.path.isdir(left)  # what the run left (the bug, before the marker)
    nxt = subprocess.run(
        [sys.executable, "-c", "from crashcourse.store import postgres_server as p;"
         " p.stop(p.start())"], env=env, capture_output=True, text=True,
        timeout=120)
    assert nxt.returncode == 0, nxt.stderr
    assert nxt.stderr.strip() == (f"postgres_server: removed {left}, a PostgreSQL"
                                  " cluster left by a killed run"
                                  f" (pid {run.pid})")
    assert os.listdir(tmp_path) == []


def test_a_private_tmpdir_as_root_is_one_refusal_not_a_traceback(tmp_path,
                                                                 monkeypatch):
    """Issue 35: chapter 10 as root with a private TMPDIR died in a
    ``CalledProcessError`` traceback from ``initdb`` (the server's user cannot
    reach the folder). Now ``ServerUnavailable``, an ``OSError`` (what a
    checkpoint records as trials that could not run), saying why, and the
    folder it made is gone."""
    if os.geteuid() != 0 or pgs.binaries() is None:
        pytest.skip("root with PostgreSQL binaries only: the server's own user")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    with pytest.raises(pgs.ServerUnavailable, match="initdb failed") as refused:
        pgs.start()
    assert isinstance(refused.value, OSError)
    assert "TMPDIR" in str(refused.value) and "\n" not in str(refused.value)
    assert list(private.iterdir()) == []
