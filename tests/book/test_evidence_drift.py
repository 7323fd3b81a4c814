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
# The matrix was committed in 5d09dc2 (96 of 96 held); edited since:
SECONDS = ("a seconds option parsed by validate.seconds (finite, ASCII digits)"
           " instead of float: a refusal at the command line only; the checkpoint"
           " passes plain decimal seconds, parsed to the same value")
ACKNOWLEDGED: dict[str, tuple[str, str]] = {
    "crashcourse/validate.py": (
        "3208e7a4a21f2696f062b16186817ce55503b6419b7d12412d83c785d592a6ad",
        "gained seconds(), a check_number with fixed bounds; nothing else changed"),
    "crashcourse/lab/killtest.py": (
        "a7531d435f986e2ce708331c99d2230f7fb3eadce578bffb9225b7d5383649bd", SECONDS),
    "crashcourse/services/supplier/server.py": (
        "451c7a7fb4d28ecc8228449780fd4a474fa3fe1f846859f0d98f1ecc6b11f474", SECONDS),
    "crashcourse/workers/host_worker.py": (
        "6c3af2062c2b0ef9697b8e9d7afcabc485b410f40a486ab4b64e113d77acee0a", SECONDS),
    "crashcourse/workers/journal_worker.py": (
        "2d47921d42023c0d212736a0c8c5a70b5aa2d7ce36edbab3fb70e39b55fab840",
        SECONDS + "; and a service's lock kept past the declared wait is"
        " ServiceLocked, 'held' (4) with a line naming the service, where it"
        " was 'held' blaming the journal's lock (issue 35): no matrix trial"
        " meets a locked service"),
    "crashcourse/workers/shop_worker.py": (
        "82a4f5d1039e5a2179b96e26153c34e28a9e3ac2695d2d8827973fdea4ea05fa", SECONDS),
    "crashcourse/workers/workflow_worker.py": (
        "87cb7983c9d335ba8c5baa7205fa0fdf18d1b1d6b41560a4bb3619876d7443e2",
        SECONDS + "; and the workflow's write lock kept past the busy timeout"
        " is 'held' (4), a service's lock past the call's wait 'unreachable'"
        " (5), where both were exit 74 or a traceback (issue 35): no matrix"
        " trial meets a locked file"),
    "crashcourse/workflow/__init__.py": (
        "4e483f6a10e33d45bd9bc0819e8fbd9183c5cd384a597683e06c716e464e9f97",
        "transition() gains the boundary moving:<state> inside its write"
        " transaction, announced only by a process asked to stop there"
        " (issue 35); the matrix never asks"),
    "crashcourse/workers/frameworks/records.py": (
        "1f1970a6b0c83fc100f7b1f959240484c772fd79611586b916099e101001a6f5",
        "names the OpenAI agent's RunState file itself (OPENAI_STATE) instead of"
        " importing the agent, and with it the SDK, while a worker is held; the"
        " OpenAI agent is not in the default matrix"),
    "crashcourse/workers/frameworks/openai_agents_agent.py": (
        "5d2e0af4ec1a28a6fe3eb7d2a882fae88bb38ab7b388dab8aa93ee1d651ef22b",
        "STATE is records.OPENAI_STATE, the same name; not in the default matrix"),
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
