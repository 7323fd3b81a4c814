"""crashcourse.lab.experiment, the one checkpoint skeleton: its command line, its
progress lines and its sequence (refuse, run, record, judge)."""

from __future__ import annotations

import argparse
import errno
import io
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from crashcourse.lab import evidence, experiment, harness

ROOT = Path(__file__).resolve().parents[2]
CH07 = ROOT / "checkpoints" / "ch07_random_kill_campaign.py"
MESSAGE = "must be a whole number from 1 to 10000, got {!r}"


def parser(**options) -> argparse.ArgumentParser:
    return experiment.command_line("A checkpoint for these tests.",
                                   quick_help="the small version", **options)


def test_one_timeout_for_every_wait():
    assert experiment.TIMEOUT == harness.DEFAULT_TIMEOUT


@pytest.mark.parametrize("text, value", [("1", 1), ("25", 25), ("10000", 10_000)])
def test_count_accepts_1_to_max(text, value):
    assert experiment.parse_count(text) == value


@pytest.mark.parametrize("text", ["0", "-1", "x", "10001", "2.5", ""])
def test_count_refuses_with_one_message(text):
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        experiment.parse_count(text)
    assert str(refused.value) == MESSAGE.format(text)


@pytest.mark.parametrize("count", ["repetitions", "trials"])
@pytest.mark.parametrize("text", ["0", "-1", "x", "10001"])
def test_repetitions_and_trials_share_the_rule(count, text, capsys):
    with pytest.raises(SystemExit) as exited:
        parser(count=count, default=3).parse_args(
            ["--output", "e.json", f"--{count}={text}"])
    assert exited.value.code == 2
    assert f"argument --{count}: {MESSAGE.format(text)}" in capsys.readouterr().err


def test_command_line_options_and_defaults():
    args = parser(count="trials", default=200, seed=7).parse_args(["--output", "e"])
    assert (args.output, args.quick, args.trials, args.seed) == (
        Path("e"), False, 200, 7)
    assert not hasattr(parser().parse_args(["--output", "e"]), "seed")


def test_output_is_required(capsys):
    with pytest.raises(SystemExit) as exited:
        parser().parse_args(["--quick"])
    assert exited.value.code == 2 and "--output" in capsys.readouterr().err


def test_quick_and_the_count_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exited:
        parser(count="repetitions", default=3).parse_args(
            ["--output", "e", "--quick", "--repetitions", "2"])
    assert exited.value.code == 2 and "not allowed" in capsys.readouterr().err


def test_help_gives_every_option_a_meaning_and_a_default():
    built = parser(count="repetitions", default=3, seed=11)
    shown = " ".join(built.format_help().split())
    for option in ("--output PATH", "--quick", "--repetitions N", "--seed N"):
        assert option in shown, option
    assert "A checkpoint for these tests." in shown
    assert "(required, no default)" in shown
    assert "the small version (default: the full run)" in shown
    assert "1 to 10000 (default: 3)" in shown
    assert "the same trials (default: 11)" in shown


def test_a_real_checkpoint_s_help_lists_every_option_with_its_default():
    done = subprocess.run([sys.executable, str(CH07), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    shown = " ".join(done.stdout.split())
    for option, default in [
        ("--output PATH", "(required, no default)"),
        ("--quick", "(default: the full run)"),
        ("--trials N", "(default: 200)"),
        ("--seed N", "(default: 7)"),
        ("--kills K", "(default: 1)"),
        ("--probe", "(default: correct)"),
        ("--jobs J", "(default: 2)"),
    ]:
        assert option in shown and default in shown, option
    assert shown.startswith("usage: ch07_random_kill_campaign.py")


def test_progress_lines():
    stream = io.StringIO()
    progress = experiment.Progress(4, stream=stream)
    trial = {"holds": True}
    assert progress.report("kill_after_payment", trial) is trial
    progress.report("race #0", {"holds": False, "error": "BoundaryTimeout: late"})
    progress.report("lost_ack", {"holds": False, "checks": {"a": True, "b": False,
                                                            "c": False}})
    progress.report("case", {"holds": False})
    assert stream.getvalue().splitlines() == [
        "[1/4] kill_after_payment: holds",
        "[2/4] race #0: FAILS (BoundaryTimeout: late)",
        "[3/4] lost_ack: FAILS (b, c)",
        "[4/4] case: FAILS",
    ]


def test_progress_writes_to_stderr_by_default(capsys):
    experiment.Progress(1).report("only", {"holds": True})
    assert capsys.readouterr() == ("", "[1/1] only: holds\n")


def run_main(tmp_path, trials, *flags, extra=None):
    """``experiment.main`` with a stand-in ``run``; returns (code, output, calls)."""
    output, calls = tmp_path / "evidence.json", []

    def run(args):
        calls.append(args)
        summary = {"held": sum(t.get("holds") is True for t in trials)}
        return (summary, trials) if extra is None else (summary, trials, extra)

    code = experiment.main(["--output", str(output), *flags],
                           parser=parser(count="trials", default=2),
                           evidence_id="crashcourse.test/1", script=__file__, run=run)
    return code, output, calls


def test_main_records_and_exits_0_when_every_trial_holds(tmp_path, capsys):
    trials = [{"case": "a", "holds": True}, {"case": "b", "holds": True}]
    code, output, calls = run_main(tmp_path, trials, "--quick",
                                   extra={"reference": {"files": 40}})
    assert code == 0 and len(calls) == 1 and calls[0].quick
    document = json.loads(output.read_text())
    assert document["schema"] == "crashcourse.test/1"
    assert document["trials"] == trials and document["reference"] == {"files": 40}
    summary = document["summary"]
    assert summary["held"] == 2 and summary["quick"] is True
    assert summary["elapsed_s"] >= 0
    assert document["manifest"]["argv"][1:] == ["--output", str(output), "--quick"]
    assert f"script/{Path(__file__).name}" in document["manifest"]["sources_sha256"]
    assert capsys.readouterr().err == f"2/2 trials hold -> {output}\n"


def test_main_exits_1_when_a_trial_fails(tmp_path, capsys):
    trials = [{"holds": True}, {"holds": False, "error": "TimeoutError: slow"}]
    code, output, _ = run_main(tmp_path, trials)
    assert code == 1 and json.loads(output.read_text())["trials"] == trials
    assert capsys.readouterr().err == f"1/2 trials hold -> {output}\n"


def test_main_exits_1_when_a_trial_has_no_verdict(tmp_path):
    code, _, _ = run_main(tmp_path, [{"holds": True}, {"case": "unjudged"}])
    assert code == 1


def test_main_exits_1_when_there_are_no_trials(tmp_path, capsys):
    code, output, _ = run_main(tmp_path, [])
    assert code == 1 and json.loads(output.read_text())["trials"] == []
    assert "0/0 trials hold" in capsys.readouterr().err


def test_main_refuses_an_existing_output_before_anything_runs(tmp_path, capsys):
    output = tmp_path / "evidence.json"
    output.write_text("earlier evidence\n")
    code, _, calls = run_main(tmp_path, [{"holds": True}])
    assert code == 2 and calls == []
    assert output.read_text() == "earlier evidence\n"
    assert "never overwritten" in capsys.readouterr().err


# Issue 14: a location the evidence could not be written to is refused before
# the first trial, with its own exit status, so no run ends by losing its
# evidence. As root a read-only directory still takes files: these are places
# no one can write, whoever runs the tests.
UNWRITABLE = ["missing/evidence.json", "a-file/evidence.json",
              "/dev/null/evidence.json"]


@pytest.mark.parametrize("where", UNWRITABLE)
def test_main_refuses_an_unwritable_output_before_any_trial(tmp_path, capsys, where):
    (tmp_path / "a-file").write_text("a file, not a directory\n")
    calls = []
    code = experiment.main(["--output", str(tmp_path / where)], parser=parser(),
                           evidence_id="crashcourse.test/1", script=__file__,
                           run=lambda args: calls.append(args) or ({}, []))
    assert (code, calls) == (experiment.BAD_INPUT, [])
    said = capsys.readouterr().err
    assert len(said.splitlines()) == 1 and said.startswith("refused: "), said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
    assert (tmp_path / "a-file").read_text() == "a file, not a directory\n"


def test_a_directory_that_refuses_a_new_file_is_refused(tmp_path, capsys,
                                                         monkeypatch):
    def denied(**where):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(experiment.tempfile, "mkstemp", denied)
    code, output, calls = run_main(tmp_path, [{"holds": True}])
    assert (code, calls) == (experiment.BAD_INPUT, []) and not output.exists()
    assert "Permission denied" in capsys.readouterr().err


def test_refused_and_failed_have_different_exit_statuses():
    assert experiment.FAILED == 1 and experiment.BAD_INPUT == 2


def test_the_writability_probe_leaves_nothing_behind(tmp_path):
    code, output, _ = run_main(tmp_path, [{"holds": True}])
    assert code == 0 and [p.name for p in tmp_path.iterdir()] == [output.name]


def test_a_real_checkpoint_refuses_an_unwritable_output_at_once(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = subprocess.run([sys.executable, str(CH07), "--quick", "--output",
                           str(blocker / "evidence.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == experiment.BAD_INPUT, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "[1/" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


# Issue 23: evidence is never lost to an odd or full output path.


def test_a_dangling_symlink_as_output_is_refused_before_any_trial(tmp_path, capsys):
    output = tmp_path / "evidence.json"
    output.symlink_to(tmp_path / "elsewhere" / "evidence.json")
    code, _, calls = run_main(tmp_path, [{"holds": True}])
    assert (code, calls) == (experiment.BAD_INPUT, [])
    said = capsys.readouterr().err
    assert len(said.splitlines()) == 1 and "symlink" in said
    assert not (tmp_path / "elsewhere").exists()


def test_a_disk_that_fills_while_writing_leaves_no_file_and_one_line(
        tmp_path, capsys, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(evidence.os, "fsync", full)
    code, output, calls = run_main(tmp_path, [{"holds": True}])
    assert code == experiment.FAILED and len(calls) == 1
    assert not output.exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no partial file either
    said = capsys.readouterr().err
    assert len(said.splitlines()) == 1 and "No space left" in said
    monkeypatch.undo()
    code, output, _ = run_main(tmp_path, [{"holds": True}])  # the next run: fine
    assert code == 0 and json.loads(output.read_text())["trials"] == [{"holds": True}]


def test_trials_the_machine_stopped_are_recorded_with_the_error(tmp_path, capsys):
    output = tmp_path / "evidence.json"

    def run(args):
        raise OSError(errno.ENOSPC, "No space left on device", "/tmp/trial")

    code = experiment.main(["--output", str(output)], parser=parser(),
                           evidence_id="crashcourse.test/1", script=__file__, run=run)
    assert code == experiment.FAILED
    document = json.loads(output.read_text())
    assert document["trials"] == []
    assert "No space left" in document["summary"]["error"]
    assert "Traceback" not in capsys.readouterr().err


def real_full_folder(tmp_path) -> Path | None:
    """A 64 KiB tmpfs mounted under ``tmp_path`` (root only), or None."""
    folder = tmp_path / "full"
    folder.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                           str(folder)], capture_output=True)
    return folder if made.returncode == 0 else None


def test_a_really_full_filesystem_leaves_no_partial_evidence(tmp_path, capsys,
                                                             monkeypatch):
    """The disk fills DURING the run: the probe before the first trial found
    room (here, a probe of one byte), the evidence then does not fit."""
    folder = real_full_folder(tmp_path)
    if folder is None:
        pytest.skip("mounting a tmpfs needs root")
    monkeypatch.setattr(experiment, "PROBE_BYTES", 1)
    try:
        (folder / "filler").write_bytes(b"x" * 60_000)
        output = folder / "evidence.json"
        big = [{"holds": True, "note": "y" * 200} for _ in range(100)]
        code = experiment.main(["--output", str(output)], parser=parser(),
                               evidence_id="crashcourse.test/1", script=__file__,
                               run=lambda args: ({}, big))
        assert code == experiment.FAILED
        assert sorted(p.name for p in folder.iterdir()) == ["filler"]
        assert "No space left" in capsys.readouterr().err
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("argv", [
    [], ["--output"], ["--output", "x.json", "--trials", "0"],
    ["--output", "x.json", "--quick", "--trials", "3"],
    ["--output", "x.json", "--seed", "+3"], ["--output", "x.json", "--seed", "٣"],
    ["--output", "x.json", "--trials", "1_0"], ["--output", "x.json", "--what"],
])
def test_a_checkpoint_refuses_bad_arguments_in_one_line(argv, capsys):
    with pytest.raises(SystemExit) as refused:
        parser(count="trials", default=2, seed=7).parse_args(argv)
    assert refused.value.code == experiment.BAD_INPUT
    said = capsys.readouterr().err
    assert len(said.splitlines()) == 1 and "error:" in said and "usage" not in said


# The one trial loop (issue 21): folder, harness, attempt, progress, jobs.

SLEEPER = ["-c", "import time; time.sleep(120)"]


def alive(pid: int) -> bool:
    """Whether ``pid`` still exists (a zombie counts: it was never reaped)."""
    return Path(f"/proc/{pid}").exists()


def trial(label: str, *args) -> experiment.Trial:
    return experiment.Trial(label, {"case": label}, args)


def test_each_trial_runs_in_a_fresh_folder_with_a_harness_of_its_own(tmp_path):
    seen = []

    def run_one(harness, folder, value):
        earlier = [where.exists() for _, where, _ in seen]
        seen.append((harness, folder, sorted(folder.iterdir())))
        (folder / "left.txt").write_text(value)
        return {"value": value, "earlier_folders_left": earlier, "holds": True}

    records = experiment.run_trials([trial("a", "x"), trial("b", "y")], run_one,
                                    where=tmp_path, progress=False)
    assert [r["value"] for r in records] == ["x", "y"]
    # a trial's folder goes when it ends, not with the last: a long run of
    # many trials never holds them all on disk at once
    assert records[1]["earlier_folders_left"] == [False]
    (one, first, empty_a), (two, second, empty_b) = seen
    assert empty_a == empty_b == [] and first != second and one is not two
    assert first.parent == second.parent and first.parent.parent == tmp_path
    assert list(tmp_path.iterdir()) == []  # every folder removed, the root too


def test_with_jobs_the_trials_run_at_once_and_come_back_in_their_order(
        capsys, monkeypatch):
    second_reported = threading.Event()
    report = experiment.Progress.report

    def reporting(self, label, record):
        done = report(self, label, record)
        if label == "second":
            second_reported.set()  # trial 2 is over but for returning
        return done

    monkeypatch.setattr(experiment.Progress, "report", reporting)

    def run_one(harness, folder, number):
        if number == 1:  # ends only after trial 2 has: needs both at once
            return {"number": 1, "holds": second_reported.wait(timeout=60)}
        return {"number": 2, "holds": True}

    records = experiment.run_trials([trial("first", 1), trial("second", 2)],
                                    run_one, jobs=2)
    assert records == [{"number": 1, "holds": True}, {"number": 2, "holds": True}]
    assert capsys.readouterr().err.splitlines() == [  # numbered as they finish
        "[1/2] second: holds", "[2/2] first: holds"]


@pytest.mark.parametrize("error", [
    TimeoutError("no row within 60 s"),
    harness.BoundaryTimeout("worker did not reach 'after_commit'"),
    harness.BoundaryNotReached("worker exited before 'after_commit'"),
    OSError(errno.ENOSPC, "No space left on device"),
])
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_trial_that_could_not_finish_is_failed_with_its_identity(error, jobs):
    def run_one(harness, folder, broken):
        if broken:
            raise error
        return {"case": "fine", "holds": True}

    plan = [experiment.Trial("stuck #1", {"case": "stuck", "repetition": 1},
                             (True,)), trial("fine", False)]
    stuck, fine = experiment.run_trials(plan, run_one, jobs=jobs, progress=False)
    assert stuck == {"case": "stuck", "repetition": 1, "holds": False,
                     "error": f"{type(error).__name__}: {error}"}
    assert fine == {"case": "fine", "holds": True}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_bug_in_a_trial_raises(jobs):
    started = []

    def run_one(harness, folder, number):
        started.append(number)
        if number == 1:
            raise KeyError("a field the judge misspelt")
        return {"holds": True}

    with pytest.raises(KeyError, match="misspelt"):
        experiment.run_trials([trial(str(n), n) for n in (1, 2, 3)], run_one,
                              jobs=jobs, progress=False)
    if jobs == 1:
        assert started == [1]  # nothing after the bug was started


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("ending", ["holds", "timeout", "bug"])
def test_no_folder_and_no_process_outlives_its_trial(tmp_path, jobs, ending):
    pids, folders = [], []

    def run_one(harness, folder, number):
        worker = harness.start(SLEEPER)
        pids.append(worker.pid)
        folders.append(folder)
        (folder / "rows.sqlite").write_bytes(b"x" * 1000)
        if ending == "timeout" and number == 2:
            raise TimeoutError("the rows never showed it")
        if ending == "bug" and number == 2:
            raise ValueError("a bug")
        return {"holds": True}

    plan = [trial(str(n), n) for n in (1, 2)]
    if ending == "bug":
        with pytest.raises(ValueError):
            experiment.run_trials(plan, run_one, jobs=jobs, where=tmp_path,
                                  progress=False)
    else:
        records = experiment.run_trials(plan, run_one, jobs=jobs, where=tmp_path,
                                        progress=False)
        assert [r["holds"] for r in records] == [True, ending == "holds"]
    assert len(pids) == 2  # both had started a worker
    assert not any(alive(pid) for pid in pids), "a worker outlived its trial"
    assert not any(folder.exists() for folder in folders)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_trial_can_keep_what_its_folder_holds():
    seen = {}

    def run_one(harness, folder, number):
        worker = harness.start(SLEEPER)
        seen[number] = worker.pid
        (folder / "rows.txt").write_text(f"rows of {number}")
        if number == 2:
            raise TimeoutError("stuck")
        return {"case": str(number), "holds": True}

    def with_rows(failed, folder):
        assert not alive(seen[2])  # its harness has closed: nothing writes now
        return failed | {"rows": (folder / "rows.txt").read_text()}

    held, failed = experiment.run_trials([trial("1", 1), trial("2", 2)], run_one,
                                         failed=with_rows, progress=False)
    assert "rows" not in held  # the hook is for failed trials only
    assert failed == {"case": "2", "error": "TimeoutError: stuck", "holds": False,
                      "rows": "rows of 2"}


def test_timed_gives_every_record_its_seconds():
    def run_one(harness, folder, broken):
        if broken:
            raise TimeoutError("late")
        return {"holds": True}

    records = experiment.run_trials([trial("a", False), trial("b", True)], run_one,
                                    timed="elapsed_s", progress=False)
    assert [sorted(r) for r in records] == [["elapsed_s", "holds"],
                                            ["case", "elapsed_s", "error", "holds"]]
    assert all(r["elapsed_s"] >= 0 for r in records)


def test_one_progress_line_per_trial(capsys):
    def run_one(harness, folder, verdict):
        return {"holds": verdict}

    experiment.run_trials([trial("a #1", True), trial("b #1", False),
                           trial("c #1", True)], run_one)
    assert capsys.readouterr().err.splitlines() == [
        "[1/3] a #1: holds", "[2/3] b #1: FAILS", "[3/3] c #1: holds"]
    experiment.run_trials([trial("quiet", True)], run_one, progress=False)
    assert capsys.readouterr().err == ""


def test_the_harness_gets_the_environment_given():
    def run_one(harness, folder):
        done = harness.run(["-c", "import os; print(os.environ['CC_TEST'])"])
        return {"said": done.stdout.strip(), "holds": True}

    [record] = experiment.run_trials([trial("env")], run_one,
                                     env={"CC_TEST": "given"}, progress=False)
    assert record["said"] == "given"


# The tail: one call.


def test_script_is_the_checkpoint_s_main(tmp_path):
    calls = []

    def run(args):
        calls.append(args)
        return {"held": 1}, [{"holds": True}], {"manifest": {"server": "pg 17"}}

    main = experiment.script(__file__, evidence_id="crashcourse.test/1",
                             parser=parser(), run=run)
    output = tmp_path / "evidence.json"
    assert main(["--output", str(output), "--quick"]) == 0 and len(calls) == 1
    document = json.loads(output.read_text())
    assert document["schema"] == "crashcourse.test/1"
    manifest = document["manifest"]  # the run's fields added, nothing lost
    assert manifest["server"] == "pg 17"
    assert f"script/{Path(__file__).name}" in manifest["sources_sha256"]
    assert manifest["argv"][1:] == ["--output", str(output), "--quick"]


def test_script_refuses_options_its_check_rejects_before_anything(tmp_path, capsys):
    calls = []
    main = experiment.script(
        __file__, evidence_id="crashcourse.test/1", parser=parser(),
        run=lambda args: calls.append(args) or ({}, [{"holds": True}]),
        check=lambda args: "--quick is not for this" if args.quick else None)
    output = tmp_path / "evidence.json"
    with pytest.raises(SystemExit) as refused:
        main(["--output", str(output), "--quick"])
    assert refused.value.code == experiment.BAD_INPUT and calls == []
    said = capsys.readouterr().err
    assert len(said.splitlines()) == 1 and "--quick is not for this" in said
    assert not output.exists()
    assert main(["--output", str(output)]) == 0 and len(calls) == 1


# Issue 35: a full filesystem took the probe's EMPTY file, so a checkpoint ran
# every trial and then could not write them. Now the probe reserves room for
# the evidence first. A tiny tmpfs stands in for the full disk (root only).


@pytest.fixture
def full_mount(tmp_path):
    folder = tmp_path / "full"
    folder.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                           str(folder)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        (folder / "filler").write_bytes(b"x" * 60 * 1024)  # an empty file still fits
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_full_filesystem_is_refused_before_any_trial(full_mount, capsys):
    code, output, calls = run_main(full_mount, [{"holds": True}])
    assert (code, calls) == (experiment.BAD_INPUT, []) and not output.exists()
    said = capsys.readouterr().err
    assert len(said.splitlines()) == 1 and "no room for the evidence" in said, said
    assert sorted(p.name for p in full_mount.iterdir()) == ["filler"]


def test_a_real_checkpoint_on_a_full_filesystem_runs_no_trial(full_mount):
    done = subprocess.run([sys.executable, str(CH07), "--quick", "--output",
                           str(full_mount / "evidence.json")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == experiment.BAD_INPUT, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "[1/" not in done.stdout
    assert "no room for the evidence" in done.stderr
    assert sorted(p.name for p in full_mount.iterdir()) == ["filler"]
