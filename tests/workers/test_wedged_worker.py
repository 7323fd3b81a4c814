"""The wedged worker of chapter 09 reads the pause flag between steps and
hangs inside one: the flag reaches it only when the hung step gives up.
Counted from the drive's and the provider's rows."""

from __future__ import annotations

import json

from crashcourse import control
from crashcourse.lab.harness import Harness
from crashcourse.services import broker, drive, mail
from crashcourse.store import opened
from crashcourse.waiting import wait_until

WEDGED = ["-m", "crashcourse.workers.wedged_worker"]


def test_the_flag_is_read_at_the_next_boundary_only(tmp_path):
    paths = {name: str(tmp_path / f"{name}.sqlite")
             for name in ("broker", "drive", "mail", "runtime")}
    broker.install(paths["broker"])
    drive.install(paths["drive"], {"f001": "scan-001.pdf", "f002": "scan-002.pdf"},
                  broker=paths["broker"])
    mail.install(paths["mail"], broker=paths["broker"])
    with opened(paths["runtime"]) as conn:
        control.set_paused(conn, False)  # installed, not paused
    token = broker.issue(paths["broker"], "assistant", "drive:rename mail:submit", 60)
    with Harness() as harness:
        worker = harness.start([*WEDGED, "--drive", paths["drive"], "--mail",
                                paths["mail"], "--runtime", paths["runtime"],
                                "--credential", token, "--limit", "12",
                                "--pace", "0.02"])
        wait_until(lambda: drive.snapshot(paths["drive"])["rename_requests"], 60,
                   interval=0.01, what="the worker's first rename")
        with opened(paths["runtime"]) as conn:
            control.set_paused(conn, True)
            flag_at = control.runtime(conn)["changed_at"]
        finished = worker.finish()
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout)["stopped_by_flag"] is True
    renames = drive.snapshot(paths["drive"])["rename_requests"]
    messages = mail.snapshot(paths["mail"])["messages"]
    assert {r["file_id"] for r in renames} == {"f001"}  # never reached step 2
    assert len(renames) + len(messages) == 12  # the whole hung step, flag or not
    assert any(r["committed_at"] > flag_at for r in renames)
