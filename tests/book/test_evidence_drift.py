"""The evidence chapter 12 reads was measured on the code in the tree, and a
test fails when a source it ran differs (issues 30 and 31, review ch09-13 #1).

The kill matrix (``bench/results/ch12_frameworks_tree.json``) records the
sha256 of every module in its manifest; ``evidence.drifted`` names each one
its checkpoint runs (``evidence.sources_used``) whose hash is not the tree's.
A file edited since, whose edit was read and does not change what the
checkpoint does, is acknowledged below AS IT IS NOW (its sha256) with what
the edit does; any other drift, a second edit of an acknowledged file, or an
acknowledgement no longer needed fails. Rerun the checkpoint instead when an
edit changes what it measures.

The cost table (``ch12_frameworks_cost.json``) hashes no sources: the
chapter names the commit that wrote it, checked here against git.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from crashcourse.lab import evidence

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
MATRIX = RESULTS / "ch12_frameworks_tree.json"
COST = RESULTS / "ch12_frameworks_cost.json"
SCRIPT = ROOT / "checkpoints" / "ch12_frameworks.py"
CHAPTER = ROOT / "book" / "12_your_framework_under_the_same_kill.md"

# manifest key -> (sha256 in the tree now, what the edit does to the matrix).
# The matrix was measured with all six frameworks named (114 of 114 held);
# edited since:
ACKNOWLEDGED: dict[str, tuple[str, str]] = {
    "script/ch12_frameworks.py": (
        "05ec50daa0525856342a20fdd119fc94ea0a17c01497b07084788e400882db96",
        "the default now runs all six frameworks, the run that wrote the matrix"
        " named them (--frameworks): the same cells, in the same order, with"
        " the same seed; an unknown name in --frameworks or --points is now"
        " refused (exit 2) instead of selecting nothing"),
    "crashcourse/workers/frameworks/temporal_server.py": (
        "9adf468a7e4ae8d5be947cb93faa73fcf119e872b68df5f752956dac5dc97fe8",
        "the wait until a server serves and its stop moved into OwnedServer, shared"
        " with Restate's: the same checks, every 0.2 s, the same bound; the error"
        " names 'the Temporal dev server'"),
    "crashcourse/workers/frameworks/restate_server.py": (
        "a34b9aa9786ac9067cc9f31a42119388045bda4418c7a8ba0d5720a8b54fdd58",
        "RunningServer is an OwnedServer (temporal_server): the same readiness"
        " checks through its wait_serving; nothing a trial does changes"),
    "crashcourse/workers/frameworks/shop.py": (
        "2e3167cff72daeb7ede42ed7ab4473def097ca19968b04bc41e7ce8151527a65",
        "gained agent_parser, parse_agent and serve_agent, the start-up Restate's"
        " and the Agents SDK's agents wrote twice; the tools and world unchanged"),
    "crashcourse/workers/frameworks/restate_agent.py": (
        "77e972f005ea2a52b01da574b83a496b49dbecf331aa765c9aadcb755037b665",
        "starts through shop.agent_parser/serve_agent: the same options, and a"
        " --world that is no trial's world is now one line, exit 2 (the"
        " checkpoint always passes a built world)"),
    "crashcourse/workers/frameworks/openai_agents_agent.py": (
        "7a62467650a561f610c595e5b9fe6037c6ee54125d61ad9740074e27118f22ac",
        "starts through shop.agent_parser/serve_agent: the same options, and a"
        " --world that is no trial's world is now one line, exit 2 (the"
        " checkpoint always passes a built world)"),
}


def unexplained(document: dict, script: Path, acknowledged: dict) -> list[str]:
    """Drift not acknowledged as the file is now, and acknowledgements of
    files that no longer drift."""
    drifted = evidence.drifted(document, script)
    now = evidence.source_hashes(script)
    wrong = [key for key in drifted
             if key not in acknowledged or acknowledged[key][0] != now.get(key)]
    stale = [f"stale: {key}" for key in acknowledged if key not in drifted]
    return wrong + stale


def matrix() -> dict:
    return json.loads(MATRIX.read_text())


def test_the_chapter_reads_the_matrix_and_the_cost_table_only():
    text = CHAPTER.read_text()
    quoted = set(re.findall(r'"results"\s*/\s*"([\w.-]+\.json)"', text))
    assert quoted == {MATRIX.name, COST.name}


def test_the_matrix_ran_on_the_code_in_the_tree():
    assert unexplained(matrix(), SCRIPT, ACKNOWLEDGED) == []
    assert all(what.strip() for _, what in ACKNOWLEDGED.values())


def test_an_edited_script_is_drift(tmp_path):
    copy = tmp_path / SCRIPT.name
    shutil.copy(SCRIPT, copy)
    assert unexplained(matrix(), copy, ACKNOWLEDGED) == []  # the copy is as measured
    copy.write_text(copy.read_text() + "\nRECORD_WAIT_S = 1.0\n")
    assert unexplained(matrix(), copy, ACKNOWLEDGED) == ["script/ch12_frameworks.py"]


def test_a_module_the_matrix_ran_that_differs_is_drift():
    document = matrix()
    recorded = document["manifest"]["sources_sha256"]
    key = "crashcourse/adapters/__init__.py"
    assert key in evidence.sources_used(SCRIPT)
    recorded[key] = "0" * 64  # as if measured on another adapter
    assert unexplained(document, SCRIPT, ACKNOWLEDGED) == [key]


def test_an_acknowledged_file_edited_again_is_drift():
    document = matrix()
    key = "crashcourse/services/drive.py"
    document["manifest"]["sources_sha256"][key] = "0" * 64  # measured before an edit
    now = evidence.source_hashes(SCRIPT)[key]
    read = {**ACKNOWLEDGED, key: (now, "an edit read and explained")}
    assert unexplained(document, SCRIPT, read) == []
    again = {**ACKNOWLEDGED, key: ("f" * 64, "an edit read and explained")}  # again
    assert unexplained(document, SCRIPT, again) == [key]


def test_an_acknowledgement_no_longer_needed_fails():
    key = "crashcourse/journal/__init__.py"
    now = evidence.source_hashes(SCRIPT)[key]
    remeasured = {**ACKNOWLEDGED, key: (now, "an edit the matrix was measured on")}
    assert unexplained(matrix(), SCRIPT, remeasured) == [f"stale: {key}"]


def test_the_chapter_names_the_commit_that_wrote_the_cost_table():
    wrote = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h", "--abbrev=7", "--",
         f"bench/results/{COST.name}"], check=True, capture_output=True,
        text=True).stdout.strip()
    assert wrote and f"commit `{wrote}`" in CHAPTER.read_text()
