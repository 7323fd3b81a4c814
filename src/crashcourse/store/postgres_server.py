"""A PostgreSQL server for the runtime: a throwaway one, or the reader's own
(chapter 10).

``start`` makes a server nobody has to install: PostgreSQL 16 from the
``pgserver`` wheel (only its binaries are used: its own manager listens on a
Unix socket alone and loosens the permissions of every parent folder), or,
without that wheel, Debian's ``postgresql`` package. It runs ``initdb`` in a
fresh temporary folder and starts ``postgres`` as a child of this process,
listening on TCP so a worker on another host (``crashcourse.lab.hosts``) reaches
it. ``stop`` shuts it down and removes the folder, leaving no process behind.

A run killed by SIGKILL runs no clean-up: its server stops (it is told to
when its parent dies) but its folder, a cluster of about 1,140 files, stays
in the temporary directory. Each folder ``start`` makes carries a marker,
``MARKER``, naming the process that made it (pid and start time); the next
``start`` removes every folder whose marker names a process that is gone and
whose server is not running, and says so on stderr, one line each. A folder
without our marker, or one whose maker still runs, is left alone (issue 35).

PostgreSQL refuses to run as root. Run by root, the server runs as the
unprivileged system user ``SERVER_USER``, created once with ``useradd``.

A reader's own server is used instead when ``URL_ENV`` holds its URL: then
nothing is started or stopped. This module imports only the standard library;
talking to the server is ``crashcourse.store.postgres``'s job.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from crashcourse.store.postgres_binaries import binaries, reachable
from crashcourse.waiting import wait_until

URL_ENV = "CRASHCOURSE_PG_URL"
SERVER_USER = "crashcourse-pg"
# A throwaway server for tests and chapters: durable across a killed client
# (the cases this book runs), not across a power cut, which no case makes.
SETTINGS = {"fsync": "off", "max_connections": "100", "shared_buffers": "32MB"}
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a child gets when its parent dies
_STARTED: dict[int, subprocess.Popen] = {}  # servers this process started, by pid
PREFIX = "crashcourse-pg-"  # every folder ``start`` makes, in the temp directory
MARKER = "crashcourse-owner.json"  # in it: {"pid", "started"} of its maker


class ServerUnavailable(RuntimeError, OSError):
    """No PostgreSQL to start here, and no URL in ``URL_ENV`` (chapter 10).

    An ``OSError`` too: the machine refused, so a checkpoint records it as
    the trials that could not run, in one line, not a traceback (issue 35)."""


@dataclasses.dataclass(frozen=True)
class Server:
    """A running server: where to connect, and what we started (chapter 10)."""

    url: str               # postgresql://postgres:SECRET@HOST:PORT/postgres
    version: str           # "16.2"
    pid: int | None        # the postmaster we started; None for the reader's own
    folder: str | None     # its data folder, removed by ``stop``
    started_in: float      # seconds from nothing to accepting connections

    def url_for(self, address: str) -> str:
        """The same server reached at ``address`` (another host's route to it)."""
        scheme, rest = self.url.split("://", 1)
        credentials, location = rest.rsplit("@", 1)
        port_and_db = location.split(":", 1)[1]
        return f"{scheme}://{credentials}@{address}:{port_and_db}"


def _server_user() -> str | None:
    """None when we are not root; else the unprivileged user, made if missing."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", SERVER_USER], check=True,
                       capture_output=True, timeout=30)
    return SERVER_USER


def _as_user(user: str | None) -> dict:
    """Popen options that run a command as ``user`` (or as ourselves)."""
    return {} if user is None else {"user": user, "group": user, "extra_groups": []}


def _free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def _initdb(bin_dir: Path, folder: Path, password: str, user: str | None) -> Path:
    """A new cluster in ``folder``/data: trust on the socket, a password on TCP."""
    secret = folder / "password"
    secret.write_text(password)
    data = folder / "data"
    made = subprocess.run(
        [bin_dir / "initdb", "-D", data, "-U", "postgres", "-E", "UTF8", "--no-sync",
         "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={secret}"],
        capture_output=True, timeout=60, **_as_user(user))
    if made.returncode != 0:  # as root, a TMPDIR the server's user cannot reach
        said = (made.stderr.decode(errors="replace").strip().splitlines()
                or ["nothing"])[-1]
        hint = "" if user is None else (
            f"; the server runs as {user}: every folder above {folder} must let"
            " it in (a private TMPDIR does not; set TMPDIR to one that does)")
        raise ServerUnavailable(f"initdb failed in {folder}: {said}{hint}")
    secret.unlink()
    with open(data / "pg_hba.conf", "a") as hba:  # the other hosts come over TCP
        hba.write("host all all 0.0.0.0/0 scram-sha-256\n")
    return data


def _ready(data: Path) -> bool:
    """postmaster.pid's eighth line says ``ready`` once connections are taken."""
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
    except FileNotFoundError:
        return False
    return len(lines) >= 8 and lines[7].strip() == "ready"


def start(*, listen: tuple[str, ...] = ("127.0.0.1",), timeout: float = 30.0,
          settings: dict[str, str] | None = None) -> Server:
    """Start a throwaway server listening on TCP at ``listen`` (chapter 10).

    ``listen`` names the addresses it accepts connections on (the first is the
    URL's); add a host's gateway address so that host can reach it."""
    bin_dir = binaries()
    if bin_dir is None:
        raise ServerUnavailable("no PostgreSQL binaries: install pgserver "
                                f"(pip) or postgresql (apt), or set {URL_ENV}")
    began, user = time.monotonic(), _server_user()
    bin_dir = reachable(bin_dir) if user is not None else bin_dir
    remove_leftovers()
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    try:
        (folder / MARKER).write_text(json.dumps(
            {"pid": os.getpid(), "started": _started(os.getpid())}))
        if user is not None:
            shutil.chown(folder, user, user)
        password = secrets.token_urlsafe(18)
        data = _initdb(bin_dir, folder, password, user)
        port = _free_port(listen[0])
        options = {**SETTINGS, **(settings or {}),
                   "listen_addresses": ",".join(listen), "port": str(port),
                   "unix_socket_directories": str(folder)}
        command = [bin_dir / "postgres", "-D", data,
                   *(arg for item in options.items() for arg in ("-c", "=".join(item)))]
        with open(folder / "server.log", "wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=log,
                                       stdin=subprocess.DEVNULL,
                                       start_new_session=True,
                                       preexec_fn=_stop_with_parent(), **_as_user(user))
        _STARTED[process.pid] = process
        _wait_ready(process, data, folder,
                    max(0.0, began + timeout - time.monotonic()))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    version = subprocess.run([bin_dir / "postgres", "--version"], check=True,
                             capture_output=True, text=True).stdout.split()[2]
    url = f"postgresql://postgres:{password}@{listen[0]}:{port}/postgres"
    return Server(url, version, process.pid, str(folder), time.monotonic() - began)


def _started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, /proc's field 22), or
    None if it is gone: a pid alone may since name another process."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _running(pid: object) -> bool:
    return isinstance(pid, int) and pid > 0 and _started(pid) is not None


def remove_leftovers(where: str | None = None) -> list[str]:
    """Remove the folders ``start`` made (``PREFIX``, with our ``MARKER``) in
    ``where`` (the temporary directory) whose maker is gone and whose server
    is not running: what a killed run left. Says so on stderr, one line each;
    the folders removed. Anything else there is left alone (issue 35)."""
    import sys

    where = where or tempfile.gettempdir()
    removed = []
    try:
        names = sorted(os.listdir(where))
    except OSError:
        return removed
    for name in names:
        folder = os.path.join(where, name)
        if not name.startswith(PREFIX) or os.path.islink(folder):
            continue
        try:
            owner = json.loads(Path(folder, MARKER).read_text())
            maker, started = owner["pid"], owner["started"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not ours, or not yet marked: leave it
        if _running(maker) and _started(maker) == started:
            continue  # its maker still runs
        try:
            postmaster = int(Path(folder, "data", "postmaster.pid")
                             .read_text().split()[0])
        except (OSError, ValueError, IndexError):
            postmaster = None
        if _running(postmaster):
            continue  # a server still shutting down (or serving): not yet
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
        print(f"postgres_server: removed {folder}, a PostgreSQL cluster left by"
              f" a killed run (pid {maker})", file=sys.stderr, flush=True)
    return removed


def _stop_with_parent():
    """A function for the server's child to call before exec: a fast shutdown
    (SIGINT) when this process dies, even by SIGKILL, which runs no cleanup.
    Made here: the child, already the server user, may not read our modules."""
    import ctypes
    from functools import partial

    return partial(ctypes.CDLL(None).prctl, PR_SET_PDEATHSIG, signal.SIGINT)


def _wait_ready(process: subprocess.Popen, data: Path, folder: Path,
                timeout: float) -> None:
    """Poll until the server takes connections; on failure stop it and say why."""

    def ready() -> bool:
        if _ready(data):
            return True
        if process.poll() is not None:
            raise ServerUnavailable("it exited")  # no use waiting on
        return False

    try:
        wait_until(ready, timeout, what="PostgreSQL taking connections")
    except (ServerUnavailable, TimeoutError):
        _halt(process.pid, 5.0)
        log = (folder / "server.log").read_text(errors="replace")[-2000:]
        raise ServerUnavailable(f"PostgreSQL did not start:\n{log}") from None


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (a server's backends), from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # gone meanwhile
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


HALT_WAIT_S = 30.0  # a SIGSTOP or SIGKILL takes effect in ms: this bound catches a hang


def _halt(pid: int, timeout: float) -> None:
    """Fast shutdown (SIGINT: clients cut, transactions rolled back, clean
    checkpoint), then, past ``timeout``, SIGKILL the postmaster and its
    children (each backend runs in a session of its own: no group to kill)."""
    process = _STARTED.pop(pid)
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout)  # the postmaster waits for every backend first
        return
    except subprocess.TimeoutExpired:
        pass
    process.send_signal(signal.SIGSTOP)  # it starts no backend while we look,
    # once the kernel has stopped it: a signal is delivered, not done (issue 36)
    wait_until(lambda: _state(pid) in ("T", "t", "Z", None), HALT_WAIT_S,
               interval=0.005, what=f"PostgreSQL's postmaster {pid} stopped (T)")
    children = _children(pid)
    for child in children:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass  # ended meanwhile
    process.kill()
    process.wait(HALT_WAIT_S)
    wait_until(lambda: all(_state(child) in ("Z", None) for child in children),
               HALT_WAIT_S, interval=0.005,
               what=f"the backends of postmaster {pid} gone")


def _state(pid: int) -> str | None:
    """The kernel's one-letter state of ``pid`` (T stopped, Z a zombie), None
    when there is none: ``crashcourse.lab.processes.state``, which the store,
    a floor below the lab, may not import (tests/book/test_house.py)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()[0]  # after "pid (comm) ": comm may hold ")"


def stop(server: Server, timeout: float = 10.0) -> None:
    """Stop a server ``start`` made and remove its folder; the reader's own
    server (no pid) is left alone (chapter 10)."""
    if server.pid in _STARTED:
        _halt(server.pid, timeout)
    if server.folder is not None:
        shutil.rmtree(server.folder, ignore_errors=True)


def own_server() -> Server | None:
    """The reader's server named by ``URL_ENV``, or None (chapter 10)."""
    url = os.environ.get(URL_ENV, "").strip()
    return Server(url, "", None, None, 0.0) if url else None


@contextmanager
def running(**options) -> Iterator[Server]:
    """The reader's server if ``URL_ENV`` names one, else a throwaway server
    from ``start(**options)``, stopped when the block ends (chapter 10)."""
    server = own_server() or start(**options)
    try:
        yield server
    finally:
        stop(server)
