"""Evidence artifacts (chapter 02): never overwritten, hashes that are real."""

from __future__ import annotations

import hashlib
import json
import platform
import sqlite3

import pytest

from crashcourse.lab import evidence, harness


def test_write_exclusive_writes_a_new_file(tmp_path):
    path = evidence.write_exclusive(tmp_path / "runs" / "a.json", {"trials": [1]})
    assert json.loads(path.read_text()) == {"trials": [1]}


def test_write_exclusive_refuses_an_existing_path_and_leaves_it(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b'{"earlier": true}\n')
    with pytest.raises(evidence.EvidenceExists):
        evidence.write_exclusive(path, {"later": True})
    assert path.read_bytes() == b'{"earlier": true}\n'


def test_refuse_existing_fails_early(tmp_path):
    path = tmp_path / "a.json"
    assert evidence.refuse_existing(path) == path
    path.write_text("x")
    with pytest.raises(FileExistsError):
        evidence.refuse_existing(path)
    assert path.read_text() == "x"


def test_nan_is_refused_and_no_file_is_left(tmp_path):
    path = tmp_path / "a.json"
    with pytest.raises(ValueError):
        evidence.write_exclusive(path, {"elapsed_ms": float("nan")})
    assert not path.exists()


def test_manifest_hashes_are_sha256_of_the_files(tmp_path):
    script = tmp_path / "ch99_probe.py"
    script.write_text("print('probe')\n")
    manifest = evidence.manifest(script, argv=["ch99_probe.py", "--quick"])
    hashes = manifest["sources_sha256"]
    assert hashes["script/ch99_probe.py"] == hashlib.sha256(
        b"print('probe')\n").hexdigest()
    modules = {name: digest for name, digest in hashes.items()
               if name.startswith("crashcourse/")}
    # top-level and nested modules alike, named by their path in the package
    assert {"crashcourse/lab/evidence.py", "crashcourse/lab/experiment.py",
            "crashcourse/services/payments/__init__.py",
            "crashcourse/store/__init__.py"} <= set(modules)
    for name, digest in modules.items():
        source = evidence.PACKAGE_DIR / name.removeprefix("crashcourse/")
        assert digest == hashlib.sha256(source.read_bytes()).hexdigest(), name
    assert manifest["argv"] == ["ch99_probe.py", "--quick"]


def test_a_changed_script_changes_its_hash(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text("a = 1\n")
    before = evidence.source_hashes(script)["script/probe.py"]
    script.write_text("a = 2\n")
    assert evidence.source_hashes(script)["script/probe.py"] != before


def test_versions_are_asked_of_this_interpreter():
    found = evidence.versions()
    assert found["python"] == platform.python_version()
    assert found["sqlite"] == sqlite3.sqlite_version


def test_new_run_path_never_names_an_existing_file(tmp_path):
    first = evidence.new_run_path(tmp_path, "ch02")
    first.write_text("{}")
    second = evidence.new_run_path(tmp_path, "ch02")
    assert second != first and not second.exists()


def test_attempt_returns_the_trial_a_run_produced():
    assert evidence.attempt({"case": "a"}, lambda x: {"case": "a", "n": x}, 3) == {
        "case": "a", "n": 3}


@pytest.mark.parametrize("failure", [
    harness.BoundaryTimeout("worker did not reach 'after_commit' within 60 s"),
    harness.BoundaryNotReached("worker exited before 'after_commit'"),
    TimeoutError("worker did not exit within 60 s"),
])
def test_attempt_keeps_a_harness_failure_as_a_failed_trial(failure):
    def run():
        raise failure

    trial = evidence.attempt({"case": "kill_after_commit"}, run)
    assert trial == {"case": "kill_after_commit", "holds": False,
                     "error": f"{type(failure).__name__}: {failure}"}


def test_attempt_does_not_hide_a_bug():
    def run():
        raise KeyError("payments")  # a bug in the checkpoint, not a slow worker

    with pytest.raises(KeyError):
        evidence.attempt({"case": "x"}, run)


def test_sources_used_follows_imports_lazy_ones_and_modules_named_in_strings(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(
        "from crashcourse.lab import evidence\n"
        "def later():\n"
        "    from crashcourse.services import mail\n"
        "COMMAND = ['-m', 'crashcourse.workers.frameworks']\n")
    used = evidence.sources_used(script)
    assert used[0] == "script/probe.py"
    assert "crashcourse/lab/evidence.py" in used
    assert "crashcourse/lab/harness.py" in used  # evidence.py imports it
    assert "crashcourse/services/mail.py" in used  # imported inside a function
    assert "crashcourse/workers/frameworks/temporal_agent.py" in used  # a package named
    assert "crashcourse/figures/scaling.py" not in used  # nothing here reaches it


def test_drifted_names_a_used_source_whose_hash_differs_and_no_other(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text("from crashcourse.services import mail\n")
    document = {"manifest": evidence.manifest(script)}
    assert evidence.drifted(document, script) == []
    hashes = document["manifest"]["sources_sha256"]
    hashes["crashcourse/services/mail.py"] = "0" * 64
    hashes["crashcourse/figures/scaling.py"] = "0" * 64  # not used: no drift
    assert evidence.drifted(document, script) == ["crashcourse/services/mail.py"]
    del hashes["crashcourse/services/mail.py"]  # not recorded at all: drift too
    assert evidence.drifted(document, script) == ["crashcourse/services/mail.py"]
    script.write_text("from crashcourse.services import mail  # edited\n")
    assert "script/probe.py" in evidence.drifted(document, script)
