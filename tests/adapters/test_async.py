"""Chapter 12's adapter around an ``async def`` tool: the same guarantee as a
sync one, on a real event loop, and through a real kill.

The body and probe run on the caller's loop; the journal's work runs in a
thread beside it. A body that awaits before and after its request is killed
(SIGKILL, at the boundary after the provider accepted): the next process,
its own ``asyncio.run``, waits out the lease, probes, and sends nothing.
The negative control is the same kill resumed with a blind probe (one that
never finds the message): the resumed call mails again.
"""

from __future__ import annotations

import asyncio
import sqlite3

from crashcourse import journal
from crashcourse.adapters import EffectTool
from crashcourse.lab.harness import Harness
from crashcourse.services import mail

ARGS = {"to": "owner@shop.example", "subject": "flour ordered", "body": "6 sacks"}

CALLER = """
import asyncio, sys
from crashcourse.adapters import EffectTool
from crashcourse.boundary import boundary
from crashcourse.services import mail

path, book = sys.argv[1], sys.argv[2]

async def send(to, subject, body, *, operation_key):
    await asyncio.sleep(0)  # a real suspension before the request
    answer = mail.submit(path, to, subject, body, {mail.KEY_HEADER: operation_key})
    boundary("after_submit")
    await asyncio.sleep(0)
    return answer

async def sent(to, subject, body, *, operation_key):
    await asyncio.sleep(0)
    if sys.argv[3:] == ["blind"]:  # the negative control: a probe that never finds
        return False, None
    return mail.probe_sent(path, operation_key)

tool = EffectTool(send, sent, journal_path=book, task="restock-flour-t1",
                  ttl=1.5, wait_s=0.5)
asyncio.run(tool(to="owner@shop.example", subject="flour ordered", body="6 sacks"))
"""


def provider(tmp_path) -> str:
    path = str(tmp_path / "mail.sqlite")
    mail.install(path)
    return path


def killed_then_resumed(tmp_path, *resume_flags: str) -> str:
    path, book = provider(tmp_path), str(tmp_path / "effects.sqlite")
    with Harness() as harness:
        worker = harness.start(["-c", CALLER, path, book], stop_at="after_submit")
        worker.wait_for_boundary()
        worker.kill()
        with sqlite3.connect(book) as conn:  # the call in doubt: no outcome
            assert conn.execute("SELECT outcome FROM journal").fetchall() == [
                (None,)]
        resumed = harness.run(["-c", CALLER, path, book, *resume_flags])
    assert resumed.returncode == 0, resumed.stderr
    return path


def test_an_async_tool_killed_after_the_provider_accepted_sends_once(tmp_path):
    path = killed_then_resumed(tmp_path)
    assert len(mail.messages(path)) == 1
    with sqlite3.connect(tmp_path / "effects.sqlite") as conn:
        assert conn.execute("SELECT resolved_by FROM journal").fetchall() == [
            (journal.PROBE,)]


def test_with_a_blind_probe_the_same_kill_mails_twice(tmp_path):
    """Negative control: the provider takes no key, so only the probe stands
    between the resumed call and a second message."""
    path = killed_then_resumed(tmp_path, "blind")
    assert len(mail.messages(path)) == 2


def test_an_async_tool_runs_its_body_on_the_callers_loop(tmp_path):
    path, book = provider(tmp_path), str(tmp_path / "effects.sqlite")
    loops, intents_seen = [], []

    async def send(to, subject, body, *, operation_key):
        loops.append(asyncio.get_running_loop())
        with sqlite3.connect(book) as other:  # the intent is in before the body
            intents_seen.extend(other.execute(
                "SELECT operation_key, outcome FROM journal").fetchall())
        return mail.submit(path, to, subject, body, {mail.KEY_HEADER: operation_key})

    async def sent(to, subject, body, *, operation_key):
        return mail.probe_sent(path, operation_key)

    tool = EffectTool(send, sent, journal_path=book, task="restock-flour-t1",
                      ttl=2.0, wait_s=1.0)

    async def main():
        first = await tool(**ARGS)
        again = await tool.function(**ARGS)  # what a framework awaits
        return asyncio.get_running_loop(), first, again

    loop, first, again = asyncio.run(main())
    assert loops == [loop], "the body ran off the caller's loop, or twice"
    assert intents_seen == [(tool.key(**ARGS), None)]
    assert first == again and len(mail.messages(path)) == 1
    assert asyncio.iscoroutinefunction(tool.function)


def test_an_async_langchain_tool_is_awaited_once(tmp_path):
    import pytest

    pytest.importorskip("langchain_core")
    from crashcourse.adapters.langgraph import as_tool

    path, book = provider(tmp_path), str(tmp_path / "effects.sqlite")

    async def notify(to: str, subject: str, *, operation_key: str) -> dict:
        """Mail someone."""
        return mail.submit(path, to, subject, "", {mail.KEY_HEADER: operation_key})

    async def notified(to, subject, *, operation_key):
        return mail.probe_sent(path, operation_key)

    made = as_tool(EffectTool(notify, notified, journal_path=book,
                              task="restock-flour-t9", ttl=2.0, wait_s=1.0))
    arguments = {"to": "owner@shop.example", "subject": "flour"}
    first = asyncio.run(made.ainvoke(arguments))
    again = asyncio.run(made.ainvoke(arguments))
    assert first == again and len(mail.messages(path)) == 1
