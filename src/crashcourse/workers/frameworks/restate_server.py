"""Restate's server as an owned child process (chapter 12).

The server is the npm package ``@restatedev/restate-server`` (its native
binary comes in ``@restatedev/restate-server-linux-x64``, or ``-arm64``),
which ``make venv`` installs into ``.cache/restate`` of the checkout
(``npm install --prefix .cache/restate``; ``CRASHCOURSE_RESTATE_SERVER``
names another binary). ``start_server(harness, folder)`` runs that binary
with its state under ``folder``, every port on loopback (TCP only), no web
UI, telemetry off, and the invocation retry policy shortened (a retry every
100 ms, so a resume does not wait out a growing backoff), as a worker of the
caller's ``Harness``: its own process group, SIGKILLed and reaped with
everything else the harness started, also when the caller fails. It returns
once the admin and ingress endpoints and its SQL introspection answer
(bounded), with their URLs.

Once installed it runs offline; at start the 1.7 server asks GitHub for
its latest release (logged as an ``octocrab`` connect error where there is
no network) and serves all the same.

``completed_runs(server, key)`` reads the server's journal of a workflow
(its SQL introspection, ``sys_journal``): the names of the ``ctx.run``
steps whose result it holds.
"""

from __future__ import annotations

import json
import platform
import urllib.error
import urllib.request
from pathlib import Path

from crashcourse.workers.frameworks.temporal_server import OwnedServer, free_port

READY_TIMEOUT = 60.0
ROOT = Path(__file__).resolve().parents[4]  # the checkout (an editable install)
PACKAGE = ROOT / ".cache" / "restate" / "node_modules" / "@restatedev"
ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
# Become the binary, without telemetry (DO_NOT_TRACK, and the config's own switch).
EXEC = ("import os, sys; os.environ['DO_NOT_TRACK'] = '1';"
        " os.execv(sys.argv[1], sys.argv[1:])")
CONFIG = """\
cluster-name = "crashcourse"
node-name = "n1"
disable-telemetry = true
log-filter = "error"
log-disable-ansi-codes = true
bind-address = "127.0.0.1:{node}"
advertised-address = "http://127.0.0.1:{node}/"

[admin]
bind-address = "127.0.0.1:{admin}"
disable-web-ui = true

[ingress]
bind-address = "127.0.0.1:{ingress}"

[default-retry-policy]
initial-interval = "100ms"
exponentiation-factor = 1.0
max-interval = "100ms"
max-attempts = 1000
on-max-attempts = "pause"
"""


def binary() -> str:
    """The ``restate-server`` binary the npm package installed."""
    import os

    given = os.environ.get("CRASHCOURSE_RESTATE_SERVER")
    arch = ARCH.get(platform.machine().lower(), platform.machine().lower())
    found = (Path(given) if given else
             PACKAGE / f"restate-server-linux-{arch}" / "bin" / "restate-server")
    if not found.is_file():
        raise FileNotFoundError(
            f"{found}: run `make venv` (npm install --prefix .cache/restate"
            " @restatedev/restate-server)")
    return str(found)


def server_version() -> str | None:
    """The installed npm package's version."""
    try:
        meta = json.loads((PACKAGE / "restate-server" / "package.json").read_text())
    except (OSError, ValueError):
        return None
    return meta.get("version")


def request(url: str, body: dict | None = None, timeout: float = 10.0,
            method: str | None = None) -> tuple[int, str]:
    """One HTTP request (bounded): its status and text, errors included."""
    data = None if body is None else json.dumps(body).encode()
    ask = urllib.request.Request(url, data=data, method=method,
                                 headers={"content-type": "application/json",
                                          "accept": "application/json"})
    try:
        with urllib.request.urlopen(ask, timeout=timeout) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


class RunningServer(OwnedServer):
    """A server the caller's harness owns: its URLs, folder and process."""

    name = "the Restate server"

    def __init__(self, admin: str, ingress: str, folder: Path, worker) -> None:
        self.admin, self.ingress, self.folder, self.worker = (admin, ingress,
                                                              folder, worker)


def start_server(harness, folder: str | Path,
                 timeout: float = READY_TIMEOUT) -> RunningServer:
    """Start ``restate-server`` with its state in ``folder``; wait until it
    serves."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ports = {"node": free_port(), "admin": free_port(), "ingress": free_port()}
    config = folder / "restate.toml"
    config.write_text(CONFIG.format(**ports))
    worker = harness.start(["-c", EXEC, binary(), "--config-file", str(config),
                            "--base-dir", str(folder / "data"),
                            "--listen-mode", "tcp", "--no-logo"])
    server = RunningServer(f"http://127.0.0.1:{ports['admin']}",
                           f"http://127.0.0.1:{ports['ingress']}", folder, worker)

    def ready() -> bool:
        try:
            if not (request(f"{server.admin}/health", timeout=2.0)[0] == 200
                    and request(f"{server.ingress}/restate/health",
                                timeout=2.0)[0] == 200):
                return False
            # the journal's SQL answers a little later (its partitions placed)
            query(server, "SELECT id FROM sys_invocation LIMIT 1")
            return True
        except (OSError, RuntimeError):
            return False

    return server.wait_serving(ready, timeout)


def query(server: RunningServer, sql: str) -> list[dict]:
    """Rows of the server's SQL introspection (its admin ``/query``)."""
    status, text = request(f"{server.admin}/query", {"query": sql}, timeout=10.0)
    if status != 200:
        raise RuntimeError(f"Restate /query {status}: {text[:300]}")
    return json.loads(text).get("rows", [])


def completed_runs(server: RunningServer, key: str,
                   workflow: str = "Restock") -> list[str]:
    """The ``ctx.run`` steps of workflow ``key`` whose result the server's
    journal holds, in journal order."""
    if "'" in key or "'" in workflow:
        raise ValueError("a key with a quote")
    rows = query(server, (
        "SELECT j.index, j.entry_type, j.name, j.entry_json FROM sys_journal j"
        " JOIN sys_invocation i ON j.id = i.id"
        f" WHERE i.target_service_name = '{workflow}'"
        f" AND i.target_service_key = '{key}'"
        " ORDER BY j.index"))
    # A step is two entries: the command (with its name and completion id)
    # and, once its result is in, a notification under the same id.
    names, done = {}, []
    for row in rows:
        entry = json.loads(row.get("entry_json") or "{}")
        run = entry.get("Command", {}).get("Run")
        if run is not None:
            names[run["completion_id"]] = run.get("name") or row.get("name")
        result = entry.get("Notification", {}).get("Completion", {}).get("Run")
        if result is not None and "Success" in result.get("result", {}):
            done.append(names.get(result["completion_id"], "?"))
    return done
