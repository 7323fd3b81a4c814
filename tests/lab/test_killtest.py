"""``python -m crashcourse.lab.killtest`` on a small project outside the package:
the same agent once unsafe (its mail sent, then its own progress written:
a kill between the two and the resumed run mails again) and once with the
same body behind ``crashcourse.adapters.EffectTool`` (journal and probe).

The verdict is read from the service's rows (the project's ``count()``),
through the kill test's evidence and exit status; the unsafe project must
be caught (exit 1, a trial with two messages), the adapted one not (exit 0,
every trial one message, the kill at the adapter's ``step-1:after_action``
really made)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SERVICE = '''"""The mail provider: a table of messages, no key taken, searchable."""
import sqlite3

DB = "provider.sqlite"


def connect():
    conn = sqlite3.connect(DB, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS sent (key TEXT, body TEXT)")
    return conn


def send(body, key):
    with connect() as conn:
        conn.execute("INSERT INTO sent VALUES (?, ?)", (key, body))


def found(key):
    with connect() as conn:
        return conn.execute("SELECT count(*) FROM sent WHERE key = ?",
                            (key,)).fetchone()[0] > 0


def count():
    with connect() as conn:
        return {"mail": conn.execute("SELECT count(*) FROM sent").fetchone()[0]}
'''

BODY = '''
import json, os, sys
import service
from crashcourse.boundary import boundary


def send_mail(body: str, *, operation_key: str) -> dict:
    service.send(body, operation_key)
    boundary("after_send")  # the project's own mark: sent, nothing recorded yet
    return {"sent": body}


def mailed(body: str, *, operation_key: str):
    return service.found(operation_key), {"sent": body}


def progress():
    return json.load(open("state.json")) if os.path.exists("state.json") else {}


def record(state):
    with open("state.json.tmp", "w") as out:
        json.dump(state, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace("state.json.tmp", "state.json")
'''

UNSAFE = BODY + '''
state = progress()
if not state.get("mailed"):
    send_mail("your order is on its way", operation_key="k-" + os.urandom(4).hex())
    record({"mailed": True})
'''

ADAPTED = BODY + '''
from crashcourse.adapters import EffectTool

tool = EffectTool(send_mail, mailed, journal_path="journal.sqlite",
                  task="order-7", ttl=1.0, wait_s=0.5)
state = progress()
if not state.get("mailed"):
    tool(body="your order is on its way")
    record({"mailed": True})
'''


def project(folder: Path, agent: str) -> Path:
    folder.mkdir()
    (folder / "service.py").write_text(SERVICE)
    (folder / "agent.py").write_text(agent)
    return folder


def killtest(folder: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    output = folder.parent / f"{folder.name}-evidence.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "crashcourse.lab.killtest", "--count", "service:count",
         "--boundary", "after_send", "--trials", "6", "--seed", "3",
         "--output", str(output), *extra, "--", sys.executable, "agent.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300,
        check=False)
    document = json.loads(output.read_text()) if output.exists() else {}
    return done, document


def by_point(document: dict) -> dict:
    return {t["kill_point"]: t for t in document["trials"]}


def test_the_unsafe_agent_is_caught(tmp_path):
    folder = project(tmp_path / "unsafe", UNSAFE)
    done, document = killtest(folder)
    assert done.returncode == 1, done.stdout + done.stderr
    assert document["summary"]["uninterrupted"] == {"mail": 1}
    killed_after_send = by_point(document)["after_send"]
    assert killed_after_send["killed"] and killed_after_send["exit"] == -9
    assert killed_after_send["counts"] == {"mail": 2}
    assert killed_after_send["exceeds"] == {"mail": 2}
    assert killed_after_send["trial"] in document["summary"]["trials_with_duplicates"]
    assert "DUPLICATES" in done.stdout
    # the start folder is untouched: every run was in a fresh copy
    assert sorted(p.name for p in folder.iterdir()) == ["agent.py", "service.py"]


def test_the_same_agent_behind_the_adapter_is_not(tmp_path):
    folder = project(tmp_path / "adapted", ADAPTED)
    done, document = killtest(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert document["summary"]["uninterrupted"] == {"mail": 1}
    trials = by_point(document)
    for point in ("after_send", "step-1:after_action", "step-1:admitted"):
        assert trials[point]["killed"] and trials[point]["exit"] == -9, point
    assert all(t["counts"] == {"mail": 1} for t in document["trials"])
    assert document["summary"]["trials_with_duplicates"] == []


def test_bad_usage_exits_2(tmp_path):
    folder = project(tmp_path / "usage", UNSAFE)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for args in (["--count", "service:count"],  # no command
                 ["--count", "service", "--", sys.executable, "agent.py"],
                 ["--count", "service:nothing", "--", sys.executable, "agent.py"],
                 ["--count", "service:count", "--", sys.executable, "-c",
                  "raise SystemExit(3)"]):
        done = subprocess.run([sys.executable, "-m", "crashcourse.lab.killtest", *args,
                               "--output", str(tmp_path / "never.json")],
                              cwd=folder, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
    assert not (tmp_path / "never.json").exists()


@pytest.mark.parametrize("counts", ['{"mail": True}', '[1]', '{"mail": "1"}'])
def test_a_count_that_is_no_dict_of_ints_is_refused(tmp_path, counts):
    folder = project(tmp_path / "shape", UNSAFE)
    (folder / "bad.py").write_text(f"def count():\n    return {counts}\n")
    done = subprocess.run(
        [sys.executable, "-m", "crashcourse.lab.killtest", "--count", "bad:count",
         "--trials", "1", "--output", str(tmp_path / "e.json"), "--",
         sys.executable, "agent.py"],
        cwd=folder, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "dict" in done.stderr


@pytest.mark.parametrize("program", [".venv/bin/python", "no-such-program-here",
                                     "./agent.py"])
def test_a_command_that_cannot_start_is_one_line_and_exit_2(tmp_path, program):
    """A relative program path is looked up in the fresh copy (``.venv`` is
    left out of it), a bare name on PATH, a file without the execute bit is
    refused by exec: each was a FileNotFoundError or PermissionError
    traceback; now one line naming the program, exit 2, nothing written."""
    folder = project(tmp_path / "start", UNSAFE)
    (folder / ".venv" / "bin").mkdir(parents=True)  # there, but not copied
    os.symlink(sys.executable, folder / ".venv" / "bin" / "python")
    done = subprocess.run(
        [sys.executable, "-m", "crashcourse.lab.killtest", "--count", "service:count",
         "--trials", "1", "--output", str(tmp_path / "never.json"), "--",
         program, "agent.py"],
        cwd=folder, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("killtest: COMMAND ") and repr(program) in lines[0]
    assert not (tmp_path / "never.json").exists()
