"""Start the supplier as a real process and wait until it listens (chapter 06).

The parent side of ``crashcourse.services.supplier``: ``start_supplier`` starts
``python -m crashcourse.services.supplier.server`` as an owned child of a
``Harness`` and waits, bounded, for its ready file; ``RunningSupplier`` is the
running process (its URL, its file, its worker), a context manager that stops
it however the block ends.
"""

from __future__ import annotations

import json

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["READY_TIMEOUT", "RunningSupplier", "start_supplier"]

READY_TIMEOUT = 10.0

# No dataclasses or pathlib at import time: every chapter 07 worker imports this
# package for drive and mail, and start-up time is the cost of each trial.


class RunningSupplier:
    """A supplier process the caller's harness owns (chapter 06)."""

    def __init__(self, url: str, db, worker) -> None:
        self.url, self.db, self.worker = url, db, worker  # worker: harness.Worker

    def url_for(self, address: str) -> str:
        """The same supplier reached at ``address``: a host's gateway when it
        listens on 0.0.0.0 (chapter 10)."""
        return f"http://{address}:{self.url.rsplit(':', 1)[1]}"

    def stop(self) -> None:
        """Kill and reap the server (its committed rows stay in ``db``)."""
        if self.worker.alive():
            self.worker.kill(expect_sigkill=False)

    def __enter__(self) -> RunningSupplier:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()  # also when the block failed: no server outlives its user


def start_supplier(harness, db, *flags: str, timeout: float = READY_TIMEOUT,
                   host: str = "127.0.0.1") -> RunningSupplier:
    """Start ``crashcourse.services.supplier.server`` on ``db`` and wait for its port.

    ``host`` is the address it listens on; ``url`` names it there (127.0.0.1
    for 0.0.0.0, which other hosts reach through ``url_for``, chapter 10).
    Introduced in chapter 06."""
    import pathlib

    from crashcourse.waiting import wait_until  # the parent side only

    db = pathlib.Path(db)
    ready = db.with_name(db.name + ".ready")
    ready.unlink(missing_ok=True)
    worker = harness.start(["-m", "crashcourse.services.supplier.server",
                            "--db", str(db), "--ready", str(ready), "--host", host,
                            *flags])

    def up() -> bool:
        if ready.exists():
            return True
        if not worker.alive():  # no use waiting on: say why it ended
            ended = worker.kill(expect_sigkill=False)  # reaped, its output read
            said = (ended.stderr.strip().splitlines() or ["nothing"])[-1]
            raise RuntimeError(f"supplier exited ({ended.returncode}) before it was"
                               f" ready: {said}")
        return False

    try:
        wait_until(up, timeout, what="the supplier's ready file")
    except TimeoutError:
        worker.kill(expect_sigkill=False)
        raise RuntimeError(
            f"supplier did not become ready within {timeout} s") from None
    port = json.loads(ready.read_text())["port"]
    shown = "127.0.0.1" if host == "0.0.0.0" else host  # every address: this one too
    return RunningSupplier(f"http://{shown}:{port}", db, worker)
