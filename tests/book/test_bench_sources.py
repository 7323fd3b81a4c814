"""Every bench result the book quotes names the sources it ran on, and fails
here when they drift from the tree unacknowledged (issue 30).

``bench/results/SOURCES.json`` (``tools/bench_sources.py``) names, per result,
the commit whose tree it ran on and the sha256 of every file its bench runs
there; a file that differs now must be acknowledged there, as it is now, with
what the change does to the figures."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
# Chapter 12's kill matrix carries its own manifest, and its cost table
# names the commit that wrote it: both checked in test_evidence_drift.py.
NOT_HERE = {"12_your_framework_under_the_same_kill.md"}
QUOTED = re.compile(r"""(?:result\(|"results"\s*/\s*)"([\w.-]+\.json)\"""")


def load_tool():
    spec = importlib.util.spec_from_file_location(
        "bench_sources", ROOT / "tools" / "bench_sources.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = load_tool()
RESULTS = TOOL.load()["results"]


def quoted() -> set[str]:
    chapters = [md for md in sorted(BOOK.glob("[0-9][0-9]_*.md"))
                if md.name not in NOT_HERE]
    return {name for md in chapters for name in QUOTED.findall(md.read_text())
            if name != TOOL.SOURCES.name}  # the record itself


def test_the_book_quotes_the_results_this_file_covers():
    found = quoted()
    assert {"journal_vs_dbos.json", "pg_claims.json", "harness.json"} <= found
    assert found <= set(RESULTS), f"no sources recorded for {found - set(RESULTS)}"


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_each_result_is_the_one_its_bench_writes(name):
    bench = (ROOT / RESULTS[name]["bench"]).read_text()
    assert f'"{name}"' in bench
    assert (ROOT / "bench" / "results" / name).is_file()


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_recorded_sources_are_the_measured_commits_files(name):
    entry = RESULTS[name]
    wrote = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%H", "--",
         f"bench/results/{name}"], check=True, capture_output=True, text=True).stdout
    assert entry["measured_at"] == wrote.strip(), "the result was written again: record"
    assert entry["sources_sha256"] == TOOL.sources_at(entry["measured_at"],
                                                      entry["bench"])
    result = json.loads((ROOT / "bench" / "results" / name).read_text())
    manifest = result.get("manifest")
    if manifest:  # a result that hashed its own sources agrees with the commit
        own = manifest["sources_sha256"]
        for path, digest in entry["sources_sha256"].items():
            key = ("crashcourse/" + path.removeprefix("src/crashcourse/")
                   if path.startswith("src/") else "script/" + Path(path).name)
            assert own[key] == digest, path


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_no_source_drifted_unacknowledged(name):
    entry = RESULTS[name]
    assert TOOL.unacknowledged(entry) == {}, (
        f"{name}: measured at {entry['measured_at'][:7]}; these sources differ now and"
        " are not acknowledged: rerun the bench and `tools/bench_sources.py record`,"
        " or `acknowledge` it with what the change does to the figures")


def test_sources_of_follows_imports_siblings_and_started_modules(tmp_path):
    (tmp_path / "src" / "crashcourse" / "sub").mkdir(parents=True)
    (tmp_path / "bench").mkdir()
    files = {
        "src/crashcourse/__init__.py": "",
        "src/crashcourse/a.py": "from .sub import b\n",
        "src/crashcourse/sub/__init__.py": "",
        "src/crashcourse/sub/b.py": "x = 1\n",
        "src/crashcourse/started.py": "",
        "src/crashcourse/unused.py": "",
        "bench/helper.py": "from crashcourse import a\n",
        "bench/child.py": "",
        "bench/run.py": ("import helper\nCHILD = 'child.py'\n"
                         "ARGV = ['-m', 'crashcourse.started']\n"),
    }
    for path, text in files.items():
        (tmp_path / path).write_text(text)
    assert TOOL.sources_of("bench/run.py", tmp_path) == sorted(
        set(files) - {"src/crashcourse/unused.py"})


def test_an_edit_is_drift_until_acknowledged_as_it_is(tmp_path):
    (tmp_path / "src" / "crashcourse").mkdir(parents=True)
    (tmp_path / "bench").mkdir()
    (tmp_path / "src" / "crashcourse" / "__init__.py").write_text("")
    (tmp_path / "bench" / "run.py").write_text("import crashcourse\n")
    measured = TOOL.hashes(TOOL.sources_of("bench/run.py", tmp_path), tmp_path)
    entry = {"bench": "bench/run.py", "sources_sha256": measured}
    assert TOOL.unacknowledged(entry, tmp_path) == {}
    init = tmp_path / "src" / "crashcourse" / "__init__.py"
    init.write_text("changed = True\n")
    now = hashlib.sha256(init.read_bytes()).hexdigest()
    assert TOOL.unacknowledged(entry, tmp_path) == {"src/crashcourse/__init__.py": now}
    files = {"src/crashcourse/__init__.py": now}
    entry["changed_since"] = {"files": files, "what": ""}  # no word on the figures
    assert TOOL.unacknowledged(entry, tmp_path) == files
    entry["changed_since"]["what"] = "a flag nobody reads"
    assert TOOL.unacknowledged(entry, tmp_path) == {}
    init.write_text("changed = 'again'\n")  # a second edit is not the one acknowledged
    assert list(TOOL.unacknowledged(entry, tmp_path)) == ["src/crashcourse/__init__.py"]
    init.write_text("")  # back as measured: the stale acknowledgement shows
    assert TOOL.unacknowledged(entry, tmp_path) == {"src/crashcourse/__init__.py": None}


def test_an_acknowledgement_adds_to_what_the_earlier_ones_said(tmp_path, monkeypatch):
    """The record of what changed since a result was measured only grows: a
    second acknowledgement keeps the first one's words (they once vanished)."""
    sources = tmp_path / "SOURCES.json"
    sources.write_text(json.dumps({"results": {"r.json": {"bench": "b.py"}}}))
    monkeypatch.setattr(TOOL, "SOURCES", sources)
    monkeypatch.setattr(TOOL, "acknowledged", lambda entry: {})
    TOOL.acknowledge("r.json", "first edit")
    TOOL.acknowledge("r.json", "second edit")
    said = json.loads(sources.read_text())["results"]["r.json"]["changed_since"]["what"]
    assert said == "first edit Then: second edit"
