"""Chapter 12's fifth and sixth frameworks under the same kill: the OpenAI
Agents SDK (resumed from the RunState it saved) and Restate (its server from
npm, started by the checkpoint).

Each test runs the checkpoint for one framework at one kill point
(``--frameworks NAME --points after_ack``): one trial per key, each worker
held once the supplier acknowledged the order, SIGKILLed (-9 verified), and
run again. The counts are read from the supplier's and the provider's rows
the trial carries: without a key from the action (``none``) the resumed run
places the order again (the negative control: two orders, two distinct
keys); behind the adapter (``action``) the supplier holds one order and the
provider one message, and the resumed call asked the supplier (GET) instead
of posting again.
"""

from __future__ import annotations

import pytest

from crashcourse.book import start_checkpoint

TIMEOUT = 600.0


def after_ack(framework: str, tmp_path) -> dict:
    done = start_checkpoint("ch12_frameworks", "--frameworks", framework,
                            "--points", "after_ack", "--trials", "1",
                            output=tmp_path / "evidence.json", timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    trials = {t["key"]: t for t in done.evidence["trials"]}
    assert sorted(trials) == ["action", "none", "position"]
    for trial in trials.values():
        assert trial["framework"] == framework and trial["kill_point"] == "after_ack"
        assert trial["returncode"] == -9 and trial["resumed_returncode"] == 0
        rows = trial["rows"]
        assert all(o["work_id"] == trial["trial"] for o in rows["orders"])
        assert trial["orders_at_service"] == len(rows["orders"])
        assert trial["messages_at_provider"] == len(rows["messages"])
    return trials


def posts(trial: dict) -> int:
    return sum(r["method"] == "POST" for r in trial["rows"]["requests"])


def check_control_and_fix(trials: dict) -> None:
    unsafe = trials["none"]  # the negative control: the duplicate is there
    assert unsafe["role"] == "finding" and unsafe["holds"]
    assert len(unsafe["rows"]["orders"]) == 2, unsafe["rows"]["orders"]
    keys = [o["operation_key"] for o in unsafe["rows"]["orders"]]
    assert len(set(keys)) == 2  # a fresh key per request: nothing to dedupe
    fixed = trials["action"]
    assert fixed["role"] == "fix" and fixed["holds"]
    assert len(fixed["rows"]["orders"]) == 1 and len(fixed["rows"]["messages"]) == 1
    assert posts(fixed) == 1, "the resumed call sent the order again"
    assert any(r["method"] == "GET" and r["answer"] == 200
               for r in fixed["rows"]["requests"])  # the probe found it


def test_openai_agents_resumed_from_its_run_state(tmp_path):
    pytest.importorskip("agents")
    trials = after_ack("openai-agents", tmp_path)
    check_control_and_fix(trials)
    for trial in trials.values():
        assert trial["resumed_how"] == "resumed"  # from the saved RunState
    # The position key is the model's call id, kept in the saved state with
    # the pending approval: the resumed call sends the same key, and the
    # supplier answers it from its record (one order, two POSTs).
    kept = trials["position"]
    assert len(kept["rows"]["orders"]) == 1 and posts(kept) == 2


def test_restate_resumed_by_its_server_replaying_the_journal(tmp_path):
    pytest.importorskip("restate")
    from crashcourse.workers.frameworks.restate_server import binary

    try:
        binary()
    except FileNotFoundError as missing:  # make venv installs it with npm
        pytest.skip(str(missing))
    trials = after_ack("restate", tmp_path)
    check_control_and_fix(trials)
    for trial in trials.values():
        assert trial["resumed_how"] == "served"  # the server had the run
    # The position key is the workflow's key and the model's call id, which
    # the journal replays: the retried step sends the same key, and the
    # supplier answers it from its record (one order, two POSTs).
    kept = trials["position"]
    assert len(kept["rows"]["orders"]) == 1 and posts(kept) == 2


def test_the_restate_server_listens_on_loopback_and_is_reaped(tmp_path):
    import os

    import psutil

    from crashcourse.lab.harness import Harness
    from crashcourse.workers.frameworks.restate_server import (
        binary,
        completed_runs,
        start_server,
    )

    try:
        binary()
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    with pytest.raises(RuntimeError, match="the caller failed"):
        with Harness() as harness:
            server = start_server(harness, tmp_path / "restate")
            pid = server.worker.pid
            listening = {c.laddr.ip for c in psutil.Process(pid).net_connections("tcp")
                         if c.status == psutil.CONN_LISTEN}
            assert listening == {"127.0.0.1"}, listening
            assert completed_runs(server, "no-such-workflow") == []
            raise RuntimeError("the caller failed")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped with its group: no such process
