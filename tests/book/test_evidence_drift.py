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
RUNS_ON = ("each installer declares RUNS_ON and refuses another database before"
           " writing (store.check_backend); the decisions and the workflow run on"
           " PostgreSQL too (identity key, table_exists, key-ordered snapshot):"
           " the matrix's SQLite stores install and read as before")
SECONDS = ("a seconds option parsed by validate.seconds (finite, ASCII digits)"
           " instead of float: a refusal at the command line only; the checkpoint"
           " passes plain decimal seconds, parsed to the same value")
SCRIPTED = ("the scripted model's reply (shop.scripted_reply) is written once in"
            " shop, where DBOS's, Restate's and Temporal's agents each wrote the"
            " same seven lines: the same messages, ids and order")
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
        "c30004f3639bd5e3a3dfe21db7181289c577ab998869636b076f8e0f50d73fb4",
        "gained agent_parser, parse_agent and serve_agent, the start-up Restate's"
        " and the Agents SDK's agents wrote twice; the tools and world unchanged;"
        " " + SCRIPTED),
    "crashcourse/workers/frameworks/restate_agent.py": (
        "77bd5018b72b9fe84f51c0795eb12c0b0a0dbcfd13275d5aaccb97bd606d2295",
        "starts through shop.agent_parser/serve_agent: the same options, and a"
        " --world that is no trial's world is now one line, exit 2 (the"
        " checkpoint always passes a built world); " + SCRIPTED),
    "crashcourse/workers/frameworks/openai_agents_agent.py": (
        "7a62467650a561f610c595e5b9fe6037c6ee54125d61ad9740074e27118f22ac",
        "starts through shop.agent_parser/serve_agent: the same options, and a"
        " --world that is no trial's world is now one line, exit 2 (the"
        " checkpoint always passes a built world)"),
    "crashcourse/claims/__init__.py": (
        "cfaa202c92fa191c07c6860a9960e66f46d40985a136ce29197a802eef48361f", RUNS_ON),
    "crashcourse/claims/fence.py": (
        "df8c81e970057104f29a3d81121a442e64535e10c44df56d5a38b273ea22fc34", RUNS_ON),
    "crashcourse/claims/orders.py": (
        "f0c8a54b64539f66434136552f1047a39199adb03a7324d255e84211bc3244fb", RUNS_ON),
    "crashcourse/claims/postgres.py": (
        "ccd9b2efc0259ddcfc79c0e722cbc08b785810accb3f0e8edce334928aba8f41", RUNS_ON),
    "crashcourse/claims/turns.py": (
        "bcddd179515f788d37a16c0e5a4896eee81a6c2390ad34fe5bc69127b481a084", RUNS_ON),
    "crashcourse/control.py": (
        "e72137e37e9d7874b2d0a92cf5132108265a6bff0e143cbaec7adbb5c8484adc", RUNS_ON),
    "crashcourse/effects.py": (
        "0a706005813b04bb9d017e0ba74f0ef5c2b1762a8888cc3545572ac3c91070fa", RUNS_ON),
    "crashcourse/journal/__init__.py": (
        "091d86b6a359d9efc4e0a9540b76d3a87bb9b4a7f85cf6fc6da7f12b30b09c05", RUNS_ON),
    "crashcourse/journal/decisions.py": (
        "219be131768b714fe5ddf19814e545c9305129dc6caada24cbdaca18691b470f", RUNS_ON),
    "crashcourse/store/__init__.py": (
        "ac90d8896df835f18439022155cb6a3f4b4b11709ebe8f55541d329c2fe3d087", (
        RUNS_ON + "; gained write_lock_free(), a probe for tests and chapter 09;"
        " nothing the matrix calls changed (issue 36)")),
    "crashcourse/workers/paying.py": (
        "233ef197f90747ebf9adc9eacb793f573b6df75fa43b435d8d9f9a9629c9759a", RUNS_ON),
    "crashcourse/workers/restock_note.py": (
        "c64f56004a233addc6a89d494e37267a8409b40b2d234c9b1f240cff2f2f999c", RUNS_ON),
    "crashcourse/workflow/__init__.py": (
        "5a01c9567fe2c66a69f2e07f519c22980bc5046b770ab7c9aef41003783e47e5", (RUNS_ON
         + "; " + ("transition() gains the boundary moving:<state> inside its write"
        " transaction, announced only by a process asked to stop there"
        " (issue 35); the matrix never asks"))),
    "crashcourse/workflow/steps.py": (
        "82bd3f94e342ed28e9c6395675c36dc7db54bbd547c8dab92ac6b58e596215c6", RUNS_ON),
    "crashcourse/store/postgres_server.py": (
        "a3f45dfafebc24a4b8c1d3908ada0080cc6b21d6e66503e2d95473bd393e330b",
        "_halt's kill path (a server past its shutdown bound) waits for the"
        " postmaster to show T before listing its backends and for them to go;"
        " a clean shutdown, the matrix's path, is unchanged (issue 36)"),
    "crashcourse/waiting.py": (
        "14b67640aba86a91a6974550abf8c37a9979d42210bb504203a93304d970eada",
        "gained waits_in(), where a thread is blocked, for tests and chapter 09;"
        " wait_until unchanged (issue 36)"),
    "crashcourse/boundary.py": (
        "94c5736650b4bdc71ca93603caff3326ed3d2f8d4cc55605f64e7f9284a1faaf",
        "a held worker's bound may be set by its parent's environment"
        " (CRASHCOURSE_HOLD_SECONDS, refused unless seconds above 0, before the"
        " boundary is announced); unset, it is 30 s as the matrix ran it, and"
        " release, kill or a closed pipe end the hold as before (issue 36)"),
    "crashcourse/workers/scheduler.py": (
        "c4d902be577ac275629eaa0c3e98a1ddd759a17163011d0329b2dff22251e398",
        "records each tick in its own scheduler_ticks row (tests wait for ticks,"
        " not sleeps); the matrix does not run the scheduler (issue 36)"),
    "crashcourse/workers/journal_worker.py": (
        "2d47921d42023c0d212736a0c8c5a70b5aa2d7ce36edbab3fb70e39b55fab840",
        SECONDS + "; and a service's lock kept past the declared wait is"
        " ServiceLocked, 'held' (4) with a line naming the service, where it"
        " was 'held' blaming the journal's lock (issue 35): no matrix trial"
        " meets a locked service"),
    "crashcourse/workers/workflow_worker.py": (
        "87cb7983c9d335ba8c5baa7205fa0fdf18d1b1d6b41560a4bb3619876d7443e2",
        SECONDS + "; and the workflow's write lock kept past the busy timeout"
        " is 'held' (4), a service's lock past the call's wait 'unreachable'"
        " (5), where both were exit 74 or a traceback (issue 35): no matrix"
        " trial meets a locked file"),
    "crashcourse/workers/frameworks/dbos_agent.py": (
        "d7c37bcbd85fc4cdd9548e5cb0d470e39cead169c75b795ab0b1ca4222b8438e", SCRIPTED),
    "crashcourse/workers/frameworks/temporal_agent.py": (
        "7d056d8a171055523b4e6c37b171071b5d42149e0d72674b8cb724e01c6f5bbf", SCRIPTED),
    "crashcourse/adapters/__init__.py": (
        "014ea3f55888d22c85448922503c0360dde0b2d8ae413e0a747424c5f7b33e0b",
        "a process keeps one journal connection per thread and SQLite file (its"
        " schema installed once, reopened when the file is replaced, rolled back"
        " after an error) where each call opened, installed and closed it; the"
        " probe's answer shape is checked before a tool's first claim, not at"
        " every call: the same transactions and commits per call, so the same"
        " kill points and rows (issue 34)"),
    "crashcourse/workers/options.py": (
        "45af2be85d63589f81f9e474165bb41dc5084354d6c737092159dfa0d4fe52a9",
        "gained OWN_FILE, the RUNS_ON of a worker's own file (SQLite's); nothing else"),
    "crashcourse/lab/harness.py": (
        "e3c7d2062573ef5859a2954dbab2b6aa8ff07c4b580bbf76118fe3dcedaee4ec",
        "gained Moments, the parent's wall-clock instants of a trial for the"
        " picture beside the evidence, which kill_and_resume also fills; the"
        " matrix's trials start, hold and kill their workers as before"),
    "crashcourse/powerloss/images.py": (
        "8624336e36d68633b6c132e7a19aa3e9ce28adc90d1960bcf8f210149671cb4c",
        "crash_states names a sync's pending operations before applying them, on"
        " two lines where it was one (chapter 11 prints it): the same states;"
        " no matrix trial models a power cut"),
    "crashcourse/powerloss/vfs.py": (
        "18d68ea42b4eafbf4e2b1201b6104dd296f7a129faa72be95e2a7f2771b4c611",
        "a shorter comment in RecordingFile.xSync (chapter 11 prints it); no"
        " code changes"),
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
    hashes = evidence.source_hashes(SCRIPT)
    recorded = matrix()["manifest"]["sources_sha256"]
    key = next(key for key, now in sorted(hashes.items())  # a file as measured
               if key not in ACKNOWLEDGED and recorded.get(key) == now)
    now = hashes[key]
    remeasured = {**ACKNOWLEDGED, key: (now, "an edit the matrix was measured on")}
    assert unexplained(matrix(), SCRIPT, remeasured) == [f"stale: {key}"]


def test_the_chapter_names_the_commit_that_wrote_the_cost_table():
    wrote = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h", "--abbrev=7", "--",
         f"bench/results/{COST.name}"], check=True, capture_output=True,
        text=True).stdout.strip()
    assert wrote and f"commit `{wrote}`" in CHAPTER.read_text()
