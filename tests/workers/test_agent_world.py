"""Chapter 12's agents with a ``--world`` that is no built world (a missing
folder, a folder without ``world.json``, a ``world.json`` that is not one):
each was a ``FileNotFoundError`` traceback (issue 35); now one line, exit 2,
and nothing made. Each is a real child process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from crashcourse.validate import BAD_INPUT

AGENTS = {  # module: (the framework it needs, its other required options)
    "dbos_agent": ("dbos", ["--key", "action"]),
    "langgraph_agent": ("langgraph", ["--api", "prebuilt", "--durability", "sync",
                                      "--key", "action"]),
    "pydantic_ai_agent": ("pydantic_ai", ["--tools", "plain", "--key", "action"]),
    "temporal_agent": ("temporalio", ["--server", "127.0.0.1:1", "--key", "action"]),
    "restate_agent": ("restate", ["--ingress", "http://127.0.0.1:1",
                                  "--admin", "http://127.0.0.1:1", "--key", "action"]),
    "openai_agents_agent": ("agents", ["--key", "action"]),
}


# one kind of bad world per agent (each start imports a framework: ~30 s on
# a loaded machine); the check is the one shared ``shop.checked_world``
@pytest.mark.parametrize("agent, world", [
    ("dbos_agent", "missing"), ("langgraph_agent", "empty"),
    ("pydantic_ai_agent", "garbled"), ("temporal_agent", "missing"),
    ("restate_agent", "empty"), ("openai_agents_agent", "garbled")])
def test_a_world_that_is_not_one_is_one_line_and_exit_2(tmp_path, agent, world):
    framework, rest = AGENTS[agent]
    pytest.importorskip(framework)
    folder = tmp_path / "world"
    if world != "missing":
        folder.mkdir()
    if world == "garbled":
        (folder / "world.json").write_text("{not json")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    done = subprocess.run(
        [sys.executable, "-m", f"crashcourse.workers.frameworks.{agent}",
         "--world", str(folder), *rest],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        cwd=tmp_path)
    lines = done.stderr.splitlines()
    assert done.returncode == BAD_INPUT, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"{agent}.py: error: --world"), lines[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
