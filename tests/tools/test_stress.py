"""tools/stress.py (``make stress``, issue 36): its command line, its record,
and that a failing run is recorded as failed, with its reason, never retried.

Fake checkpoints (a few lines of stdlib) stand in for the real ones: each test
takes about a second; the stress runs themselves are not run here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "stress.py"
_spec = importlib.util.spec_from_file_location("stress_tool", TOOL)
stress = sys.modules.setdefault("stress_tool", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(stress)  # in sys.modules first: its dataclasses look there

# A checkpoint that records one failed trial (with its error) and exits 1,
# as a real one does when a trial does not hold.
FAILING = textwrap.dedent("""
    import argparse, json, sys
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    trials = [{"case": "dead_host", "holds": False, "checks": {"one_winner": False},
               "error": "TimeoutError: pid 7 ended before 'writing'"},
              {"case": "paused", "holds": True, "checks": {"one_winner": True}}]
    with open(args.output, "x") as handle:
        json.dump({"summary": {}, "trials": trials}, handle)
    print("[1/2] dead_host: FAILS (row 7 missing)", file=sys.stderr)
    sys.exit(1)
""")


def run_tool(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *argv], capture_output=True,
                          text=True, timeout=60, cwd=cwd)


@pytest.mark.parametrize("argv", [
    ["--repeats", "0"], ["--repeats", "x"], ["--adversity", "earthquake"],
    ["--adversity", "cpu", "--adversity", "cpu"], ["--checkpoints", "99"],
    ["--notebooks", "77"], ["--timeout", "nan"], ["--budget", "-1"],
    ["--cpu-hogs", "0"], ["--checkpoints", "--no-notebooks"],
    ["--no-notebooks", "--notebooks", "01"], ["--bogus"],
])
def test_bad_input_is_one_line_exit_2_and_nothing_is_written(tmp_path, argv):
    output = tmp_path / "stress.json"
    done = run_tool(*argv, "--output", str(output), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "error:" in done.stderr
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no record, nothing else


def test_an_output_in_a_missing_folder_is_refused_before_anything_runs(tmp_path):
    done = run_tool("--output", str(tmp_path / "no" / "such" / "s.json"), cwd=tmp_path)
    assert done.returncode == 2 and "--output" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_help_explains_the_adversities_and_the_rules(tmp_path):
    done = run_tool("--help", cwd=tmp_path)
    assert done.returncode == 0
    for word in ("cpu", "twin", "pg_killer", "NEVER retried", "--budget",
                 "left_behind", "Exit status"):
        assert word in done.stdout, word


def test_the_defaults_run_every_checkpoint_and_notebook_beside_all_three(tmp_path):
    args = stress.parse(["--output", str(tmp_path / "s.json")])
    assert args.adversity == list(stress.ADVERSITIES)
    names = {t.name for t in args.targets}
    assert {p.stem for p in (ROOT / "checkpoints").glob("ch[0-9][0-9]_*.py")} <= names
    assert {p.name for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb")} <= names
    command, output = args.targets[0].command(tmp_path, 0)
    assert "--quick" in command and command[-1] == str(output)


@pytest.fixture
def failing_checkpoint(tmp_path, monkeypatch):
    script = tmp_path / "ch99_fake.py"
    script.write_text(FAILING)
    monkeypatch.setattr(stress, "checkpoints", lambda: {"99": script})
    monkeypatch.setattr(stress, "GONE_GRACE_S", 0.5)
    return script


def test_a_failing_run_is_recorded_failed_with_its_reason_once(failing_checkpoint,
                                                               tmp_path, capsys):
    output = tmp_path / "stress.json"
    status = stress.main(["--checkpoints", "99", "--no-notebooks", "--repeats", "1",
                          "--adversity", "cpu", "--adversity", "twin",
                          "--cpu-hogs", "1", "--timeout", "60",
                          "--output", str(output)])
    assert status == 1
    record = json.loads(output.read_text())
    runs = record["runs"]
    # one run beside cpu, two copies beside twin: three records, no retry
    assert [(r["adversity"], r["copy"]) for r in runs] == [
        ("cpu", 0), ("twin", 0), ("twin", 1)]
    for run in runs:
        assert run["ran"] is True and run["holds"] is False
        assert run["returncode"] == 1 and run["timed_out"] is False
        assert (run["trials"], run["trials_held"]) == (2, 1)
        assert run["failed_trials"] == [{"name": "dead_host", "checks_failed":
                                         ["one_winner"], "error":
                                         "TimeoutError: pid 7 ended before 'writing'"}]
        assert "trial dead_host: TimeoutError: pid 7 ended before 'writing'" \
            in run["reason"]
        assert "[1/2] dead_host: FAILS (row 7 missing)" in run["reason"]
        assert run["command"] == ["python", str(failing_checkpoint), "--quick",
                                  "--output", "EVIDENCE.json"]
        assert len(run["load_before"]) == len(run["load_after"]) == 3
        assert run["seconds"] >= 0 and "left_behind" not in run
    assert runs[0]["adversity_detail"] == {"cpu_hogs": 1}
    assert record["summary"]["ran"] == 3 and record["summary"]["held"] == 0
    assert record["summary"]["failed"] == ["ch99_fake beside cpu #1.0",
                                           "ch99_fake beside twin #1.0",
                                           "ch99_fake beside twin #1.1"]
    assert record["settings"]["retries"] == 0
    assert record["schema"] == stress.SCHEMA
    assert record["machine"]["cpus"] == os.cpu_count()
    assert {"python", "platform", "load_average_at_start", "load_average_at_end"} \
        <= set(record["machine"])
    assert "sources_sha256" in record["manifest"]
    assert record["targets_sha256"] == {str(failing_checkpoint): stress.hashlib.sha256(
        failing_checkpoint.read_bytes()).hexdigest()}
    assert set(record["git"]) == {"commit", "dirty"}
    shown = capsys.readouterr().out
    assert shown.count("FAILED") == 3 + 3  # a line per run as it ends, and the list


def test_a_run_past_its_timeout_is_stopped_failed_and_leaves_nothing(tmp_path,
                                                                     monkeypatch):
    """A hung run and the child it put in a session of its own (as a server
    or a kernel is): both ended, the run failed, the child named."""
    monkeypatch.setattr(stress, "GONE_GRACE_S", 0.5)
    hang = ("import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
            " start_new_session=True)\n"
            "print('started', flush=True)\n"
            "time.sleep(60)\n")
    [record] = stress.execute([([sys.executable, "-c", hang], None)], tmp_path, 2.0)
    assert record["holds"] is False and record["timed_out"] is True
    assert record["reason"][0].startswith("stopped after 2 s")
    assert "started" in record["reason"]
    [child] = record["left_behind"]
    pid = int(child.split()[0])
    assert "time.sleep(60)" in child
    try:  # killed: gone, or a zombie until its new parent (init) reaps it
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z")
