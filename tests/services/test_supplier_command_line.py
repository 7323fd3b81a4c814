"""The supplier's own command line (chapter 06; issue 23): a place that is no
file, a damaged store, an address that cannot be bound, each refused in one
line with its documented status, leaving the places as they were.

Run as root, an ``os.replace`` onto ``--ready /dev/full`` once turned the
device into a regular file; these tests use a FIFO in ``tmp_path`` instead, so
a regression replaces nothing that matters outside the test.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from crashcourse.validate import BAD_INPUT

IO_ERROR = 74  # the server's status for an address or file the machine refuses
SERVE_S = 20  # bound on one refusal (a server that serves is killed by timeout)


def serve(*args: str) -> subprocess.CompletedProcess:
    """The server, run to its refusal; TimeoutExpired if it serves instead."""
    return subprocess.run(
        [sys.executable, "-m", "crashcourse.services.supplier.server", *args],
        capture_output=True, text=True, timeout=SERVE_S)


def one_line(ended: subprocess.CompletedProcess, status: int, says: str) -> None:
    assert ended.returncode == status, ended.stderr
    assert "Traceback" not in ended.stderr
    lines = ended.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], ended.stderr


@pytest.fixture
def fifo(tmp_path):
    place = tmp_path / "fifo"
    os.mkfifo(place)
    yield place
    assert stat.S_ISFIFO(os.lstat(place).st_mode), "the FIFO was replaced"


def test_a_ready_place_that_is_no_file_is_refused_and_left_alone(tmp_path, fifo):
    one_line(serve("--db", str(tmp_path / "s.db"), "--ready", str(fifo)),
             BAD_INPUT, "not a regular file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]  # no store made


def test_a_store_place_that_is_no_file_is_refused(tmp_path, fifo):
    one_line(serve("--db", str(fifo), "--ready", str(tmp_path / "r")),
             BAD_INPUT, "not a regular file")
    one_line(serve("--db", str(tmp_path), "--ready", str(tmp_path / "r")),
             BAD_INPUT, "not a file in an existing directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def test_a_damaged_store_is_refused_untouched(tmp_path):
    junk = tmp_path / "s.db"
    junk.write_bytes(b"not a database, " * 400)
    before = junk.read_bytes()
    one_line(serve("--db", str(junk), "--ready", str(tmp_path / "r")),
             BAD_INPUT, "--db")
    assert junk.read_bytes() == before
    assert not (tmp_path / "r").exists()


def test_an_address_that_cannot_be_bound_leaves_no_store(tmp_path):
    one_line(serve("--db", str(tmp_path / "s.db"), "--ready", str(tmp_path / "r"),
                   "--host", "999.1.1.1"),
             IO_ERROR, "error")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "3601"])
def test_a_hold_out_of_range_is_refused(tmp_path, value):
    one_line(serve("--db", str(tmp_path / "s.db"), "--ready", str(tmp_path / "r"),
                   "--hold-first", value),
             BAD_INPUT, "--hold-first")
    assert list(tmp_path.iterdir()) == []


def test_until_next_without_a_hold_is_refused(tmp_path):
    """``--until-next`` holds the first POST until a later one is decided, with
    ``--hold-first`` as its bound: without that bound it is refused (issue 36)."""
    one_line(serve("--db", str(tmp_path / "s.db"), "--ready", str(tmp_path / "r"),
                   "--until-next"),
             BAD_INPUT, "--until-next")
    assert list(tmp_path.iterdir()) == []



@pytest.mark.parametrize("option, value", [
    ("--timeout", "0"), ("--timeout", "-1"), ("--busy-ms", "0"), ("--busy-ms", "-5"),
])
def test_a_wait_that_is_not_positive_is_refused(tmp_path, option, value):
    """Each of --timeout and --busy-ms alone must be positive (issue 23)."""
    one_line(serve("--db", str(tmp_path / "s.db"), "--ready", str(tmp_path / "r"),
                   option, value),
             BAD_INPUT, "--timeout and --busy-ms must be positive")
    assert list(tmp_path.iterdir()) == []


PARENT = """
import pathlib, sys, time
from crashcourse.lab.harness import Harness
from crashcourse.services.supplier.process import start_supplier
with Harness() as harness:
    supplier = start_supplier(harness, sys.argv[1])
    pathlib.Path(sys.argv[2]).write_text(str(supplier.worker.pid))
    time.sleep(60)  # until the test kills this parent
"""


def serving(pid: int, db) -> bool:
    """Whether ``pid`` is still the supplier on ``db``, and not a zombie."""
    try:
        command = open(f"/proc/{pid}/cmdline", "rb").read()
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return str(db).encode() in command and state != "Z"


def test_a_supplier_stops_when_its_parent_is_killed(tmp_path):
    """SIGKILL skips the parent's harness clean-up: without the server's own
    watch, the supplier serves on under init (it did, before this test)."""
    from crashcourse.waiting import wait_until

    db, said = tmp_path / "s.db", tmp_path / "pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(db), str(said)],
                              start_new_session=True)
    supplier = None
    try:
        wait_until(lambda: said.exists() and said.read_text(), 60,
                   what="the supplier's pid")
        supplier = int(said.read_text())
        assert serving(supplier, db)
        os.kill(parent.pid, 9)
        parent.wait(timeout=10)
        # its watch polls getppid; 60 s only bounds a hang on a loaded machine
        wait_until(lambda: not serving(supplier, db), 60,
                   what="the orphaned supplier to stop")
    finally:
        if parent.poll() is None:
            os.kill(parent.pid, 9)
            parent.wait(timeout=10)
        if supplier is not None and serving(supplier, db):
            os.kill(supplier, 9)  # ours: its command line names our tmp file
