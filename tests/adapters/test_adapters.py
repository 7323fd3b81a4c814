"""The adapter of chapter 12: a tool call behind the effect boundary.

Graded against the mail provider, the one service that takes no key: only
the adapter's own record and its probe stand between a resumed call and a
second message. Each guarantee has a test that fails when it is broken by
hand in ``crashcourse/adapters/__init__.py``:

* the key comes from the action (take it from anything the process or the
  framework assigns and the resumed call's probe asks under another key:
  two messages);
* the intent is committed before the body runs (read from the journal's
  own file, inside the body, through another connection);
* a call found in doubt is probed before it runs again (skip the probe and
  the mail goes twice);
* a real process killed after the provider accepted the message: the next
  process waits out its lease, probes, and sends nothing.
"""

from __future__ import annotations

import ast
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from crashcourse import journal
from crashcourse.adapters import EffectTool
from crashcourse.lab.harness import Harness
from crashcourse.services import mail

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "src" / "crashcourse" / "adapters"
FRAMEWORKS = ("langgraph", "langchain", "langchain_core", "dbos", "temporalio",
              "pydantic_ai")
ARGS = {"to": "owner@shop.example", "subject": "flour ordered", "body": "6 sacks"}


class Killed(BaseException):
    """Stands in for SIGKILL inside the body, in-process: not an Exception,
    so nothing on the way out records an outcome for it."""


def provider(tmp_path) -> str:
    path = str(tmp_path / "mail.sqlite")
    mail.install(path)
    return path


def mailer(path: str, *, die_after_submit: bool = False, seen: list | None = None,
           probe=None, journal_path: str, owner: str = "first", ttl: float = 2.0):
    """A tool that mails through the provider, behind the adapter."""

    def send(to: str, subject: str, body: str, *, operation_key: str) -> dict:
        if seen is not None:
            seen.append(operation_key)
        answer = mail.submit(path, to, subject, body, {mail.KEY_HEADER: operation_key})
        if die_after_submit:
            raise Killed  # accepted by the provider; the adapter hears nothing
        return answer

    def sent(to, subject, body, *, operation_key):
        return mail.probe_sent(path, operation_key)

    return EffectTool(send, probe or sent, journal_path=journal_path,
                      task="restock-flour-t1", ttl=ttl, wait_s=ttl / 2,
                      owner=owner, wait_out_s=30.0)


def test_a_resumed_call_gets_the_same_key_and_sends_nothing(tmp_path):
    path, book = provider(tmp_path), str(tmp_path / "effects.sqlite")
    seen: list[str] = []
    with pytest.raises(Killed):
        mailer(path, die_after_submit=True, seen=seen, journal_path=book)(**ARGS)
    # another process, another owner, as a framework's recovery would call it
    again = mailer(path, seen=seen, journal_path=book, owner="second")
    result = again(**ARGS)
    assert len(mail.messages(path)) == 1, "the resumed call mailed again"
    assert seen == [again.key(**ARGS)], "the body ran again"
    assert result["message_id"] == mail.messages(path)[0]["message_id"]


def test_the_key_is_the_actions_alone(tmp_path):
    """Two tools made apart (two processes) agree on the key of one action,
    and another argument is another action."""
    book = str(tmp_path / "effects.sqlite")
    one = mailer("unused", journal_path=book, owner="a")
    two = mailer("unused", journal_path=book, owner="b")
    assert one.key(**ARGS) == two.key(**ARGS)
    assert one.key(**ARGS) != one.key(**{**ARGS, "body": "7 sacks"})
    assert one.key(**ARGS).startswith("restock-flour-t1/send/")


def test_the_intent_is_committed_before_the_body_runs(tmp_path):
    path, book = provider(tmp_path), str(tmp_path / "effects.sqlite")
    rows_seen_by_the_body = []

    def send(to, subject, body, *, operation_key):
        with sqlite3.connect(book) as other:  # the journal's file, not its conn
            rows_seen_by_the_body.extend(other.execute(
                "SELECT operation_key, outcome FROM journal").fetchall())
        return mail.submit(path, to, subject, body, {mail.KEY_HEADER: operation_key})

    tool = EffectTool(send, lambda **a: mail.probe_sent(path, a["operation_key"]),
                      journal_path=book, task="restock-flour-t1", ttl=2.0,
                      wait_s=1.0)
    tool(**ARGS)
    assert rows_seen_by_the_body == [(tool.key(**ARGS), None)]


def test_a_call_in_doubt_is_probed_before_it_runs_again(tmp_path):
    path, book = provider(tmp_path), str(tmp_path / "effects.sqlite")
    asked = []

    def probe(to, subject, body, *, operation_key):
        asked.append(operation_key)
        return mail.probe_sent(path, operation_key)

    with pytest.raises(Killed):
        mailer(path, die_after_submit=True, probe=probe, journal_path=book)(**ARGS)
    asked.clear()  # the first call's own look before its intent
    mailer(path, probe=probe, journal_path=book, owner="second")(**ARGS)
    assert asked, "the call in doubt was not probed"
    assert len(mail.messages(path)) == 1
    with sqlite3.connect(book) as conn:
        assert conn.execute("SELECT resolved_by FROM journal").fetchall() == [
            (journal.PROBE,)]


def test_a_finished_call_is_answered_from_the_journal(tmp_path):
    path, book = provider(tmp_path), str(tmp_path / "effects.sqlite")
    seen: list[str] = []
    first = mailer(path, seen=seen, journal_path=book)(**ARGS)
    again = mailer(path, seen=seen, journal_path=book, owner="second")(**ARGS)
    assert again == first and len(seen) == 1 and len(mail.messages(path)) == 1


CALLER = """
import sys
from crashcourse.adapters import EffectTool
from crashcourse.boundary import boundary
from crashcourse.services import mail

path, book = sys.argv[1], sys.argv[2]

def send(to, subject, body, *, operation_key):
    answer = mail.submit(path, to, subject, body, {mail.KEY_HEADER: operation_key})
    boundary("after_submit")
    return answer

def sent(to, subject, body, *, operation_key):
    return mail.probe_sent(path, operation_key)

tool = EffectTool(send, sent, journal_path=book, task="restock-flour-t1",
                  ttl=1.5, wait_s=0.5)
tool(to="owner@shop.example", subject="flour ordered", body="6 sacks")
"""


def test_a_real_kill_after_the_provider_accepted(tmp_path):
    path, book = provider(tmp_path), str(tmp_path / "effects.sqlite")
    with Harness() as harness:
        worker = harness.start(["-c", CALLER, path, book], stop_at="after_submit")
        worker.wait_for_boundary()
        worker.kill()
        with sqlite3.connect(book) as conn:  # the call in doubt: no outcome
            assert conn.execute("SELECT outcome FROM journal").fetchall() == [
                (None,)]
        resumed = harness.run(["-c", CALLER, path, book])
    assert resumed.returncode == 0, resumed.stderr
    assert len(mail.messages(path)) == 1
    with sqlite3.connect(book) as conn:
        assert conn.execute("SELECT resolved_by FROM journal").fetchall() == [
            (journal.PROBE,)]


def test_the_signature_a_framework_reads_has_no_key(tmp_path):
    import inspect

    tool = mailer("unused", journal_path=str(tmp_path / "e.sqlite"))
    assert list(inspect.signature(tool.function).parameters) == [
        "to", "subject", "body"]
    assert tool.function.__name__ == "send"


def test_the_package_imports_no_framework():
    shown = subprocess.run(
        [sys.executable, "-c", "import sys, crashcourse.adapters;"
         f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS}))"],
        capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == "[]"


def imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
    return names


def test_no_runtime_module_imports_a_framework():
    """Only the adapters' framework parts and the chapter 12 workers do."""
    package = ROOT / "src" / "crashcourse"
    allowed = {ADAPTERS / "langgraph.py", ADAPTERS / "dbos.py",
               ADAPTERS / "temporal.py"}
    offenders = [str(p.relative_to(package)) for p in package.rglob("*.py")
                 if p not in allowed and "frameworks" not in p.parts
                 and imports_of(p) & set(FRAMEWORKS)]
    assert offenders == []
