"""Chapter 12's parts around the frameworks: Temporal's dev server is an owned
child process, on loopback, reaped even when its user fails; the adapter's
framework parts hand each framework a tool without the key in its schema."""

from __future__ import annotations

import os

import psutil
import pytest

from crashcourse.adapters import EffectTool
from crashcourse.lab.harness import Harness
from crashcourse.services import mail


def test_the_dev_server_listens_on_loopback_and_is_reaped(tmp_path):
    pytest.importorskip("temporalio")
    from crashcourse.workers.frameworks.temporal_server import (
        history,
        start_dev_server,
    )

    with pytest.raises(RuntimeError, match="the caller failed"):
        with Harness() as harness:
            server = start_dev_server(harness, tmp_path / "temporal.sqlite")
            pid = server.worker.pid
            assert server.address.startswith("127.0.0.1:")
            listening = {c.laddr.ip for c in psutil.Process(pid).net_connections("tcp")
                         if c.status == psutil.CONN_LISTEN}
            assert listening == {"127.0.0.1"}, listening
            assert history(server, "no-such-workflow") == []
            raise RuntimeError("the caller failed")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped with its group: no such process


@pytest.fixture
def tool(tmp_path):
    path = str(tmp_path / "mail.sqlite")
    mail.install(path)

    def notify(to: str, subject: str, *, operation_key: str) -> dict:
        """Mail someone."""
        return mail.submit(path, to, subject, "", {mail.KEY_HEADER: operation_key})

    def notified(to, subject, *, operation_key):
        return mail.probe_sent(path, operation_key)

    return path, EffectTool(notify, notified, journal_path=str(tmp_path / "e.sqlite"),
                            task="restock-flour-t9", ttl=2.0, wait_s=1.0)


def test_the_langchain_tool_hides_the_key(tool):
    pytest.importorskip("langchain_core")
    from crashcourse.adapters.langgraph import as_tool

    path, effect = tool
    made = as_tool(effect)
    assert (made.name, set(made.args)) == ("notify", {"to", "subject"})
    made.invoke({"to": "owner@shop.example", "subject": "flour"})
    made.invoke({"to": "owner@shop.example", "subject": "flour"})
    assert len(mail.messages(path)) == 1


def test_the_temporal_activity_takes_one_dict(tool):
    pytest.importorskip("temporalio")
    from temporalio import activity

    from crashcourse.adapters.temporal import as_activity

    path, effect = tool
    made = as_activity(effect)
    assert activity._Definition.from_callable(made).name == "notify"
    made({"to": "owner@shop.example", "subject": "flour"})
    made({"to": "owner@shop.example", "subject": "flour"})
    assert len(mail.messages(path)) == 1
