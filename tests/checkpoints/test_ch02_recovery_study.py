"""The chapter 02 recovery study: its evidence, its grader and its refusals."""

from __future__ import annotations

import copy
import io
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.checkpoints import script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "checkpoints" / "ch02_recovery_study.py"
EXPECTED = {  # payments at the end; the mutant's killed recovery: at least 2
    "uninterrupted": 1,
    "kill_before_payment": 1,
    "kill_after_payment": 1,
    "kill_after_checkpoint": 1,
    "recovery_killed_before_payment": 1,
    "recovery_killed_after_payment": 1,
    "revoked_before_payment": 0,
    "revoked_after_payment": 1,
    "mutant_uninterrupted": 1,
    "mutant_kill_before_payment": 1,
    "mutant_kill_after_payment": 2,
    "mutant_recovery_killed_after_payment": 2,
}
TRIAL_FIELDS = {
    "intervention", "repetition", "boundary", "interrupted_pid",
    "interrupted_returncode", "snapshot_at_interruption", "resumed_pid",
    "resumed_returncode", "final_snapshot", "expected_payments", "holds",
}


study = script("ch02_recovery_study")


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run(*args: str) -> Ran:
    """The script's ``main`` in this process (its workers are real processes);
    tests/checkpoints/test_quick.py runs it as a command line too."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = study.main(list(args))
        except SystemExit as exit:  # argparse refusing the arguments
            code = exit.code
    return Ran(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def quick(quick_checkpoint):
    done = quick_checkpoint("ch02_recovery_study")
    assert done.returncode == 0, done.stderr[-2000:]
    return done, done.evidence


def by_name(evidence: dict) -> dict[str, dict]:
    return {t["intervention"]: t for t in evidence["trials"]}


def test_every_intervention_with_the_expected_payments(quick):
    _, evidence = quick
    trials = by_name(evidence)
    assert list(trials) == list(EXPECTED)
    observed = {name: t["final_snapshot"]["payments"] for name, t in trials.items()}
    at_least = "mutant_recovery_killed_after_payment"
    assert observed.pop(at_least) >= EXPECTED[at_least]
    assert observed == {k: v for k, v in EXPECTED.items() if k != at_least}
    assert all(TRIAL_FIELDS <= set(t) for t in evidence["trials"])
    assert all(t["holds"] is True for t in evidence["trials"])
    summary = evidence["summary"]
    assert summary["reference_held"] == summary["reference_trials"] == 8
    assert summary["holds"] is True and summary["repetitions"] == 1


def snapshots_of(trial: dict) -> list[dict]:
    """Every snapshot a trial holds: at the kill, after each killed
    replacement, at the end."""
    found = [trial["snapshot_at_interruption"], trial["final_snapshot"]]
    found += [a["snapshot"] for a in trial["recovery_killed"]]
    return [snap for snap in found if snap is not None]


def test_counts_are_the_rows(quick):
    _, evidence = quick
    for trial in evidence["trials"]:
        for snap in snapshots_of(trial):
            assert snap["payments"] == len(snap["rows"]["payments"])
            assert snap["checkpoints"] == len(snap["rows"]["checkpoints"])


def test_kills_were_real_and_replacements_are_new_processes(quick):
    _, evidence = quick
    for trial in evidence["trials"]:
        if trial["boundary"] is None:
            assert trial["interrupted_pid"] is None
            continue
        assert trial["interrupted_returncode"] == -9
        assert trial["resumed_pid"] != trial["interrupted_pid"]


def test_the_crash_gap_one_payment_no_checkpoint(quick):
    _, evidence = quick
    gap = by_name(evidence)["kill_after_payment"]["snapshot_at_interruption"]
    assert (gap["payments"], gap["checkpoints"]) == (1, 0)


def test_mutant_exits_zero_yet_is_detected_from_rows(quick):
    _, evidence = quick
    mutant = by_name(evidence)["mutant_kill_after_payment"]
    assert mutant["resumed_returncode"] == 0
    keys = {p["key"] for p in mutant["final_snapshot"]["rows"]["payments"]}
    assert len(keys) == 2 and mutant["detected"]
    assert evidence["summary"]["mutant_detected"] == 2  # where it pays twice


def test_the_mutant_passes_where_nothing_dies_in_the_gap(quick):
    _, evidence = quick
    trials = by_name(evidence)
    for name in ("mutant_uninterrupted", "mutant_kill_before_payment"):
        assert trials[name]["final_snapshot"]["payments"] == 1
        assert trials[name]["detected"] is False and trials[name]["holds"] is True


def test_recovery_itself_was_killed_and_the_last_resume_pays_once(quick):
    _, evidence = quick
    trials = by_name(evidence)
    for name in ("recovery_killed_before_payment", "recovery_killed_after_payment",
                 "mutant_recovery_killed_after_payment"):
        attempts = trials[name]["recovery_killed"]
        assert len(attempts) == study.RECOVERY_KILLS == 3
        # SIGKILLed at the instant, or already ended on its own before it
        assert {a["returncode"] for a in attempts} <= {-9, 0}
        # drawn over the measured life of a replacement in this situation
        assert all(0 <= a["planned_ms"] <= evidence["summary"]["span_ms"][name]
                   for a in attempts)
    given = [a for t in trials.values() for a in t.get("recovery_killed", ())]
    assert evidence["summary"]["replacements_given_an_instant"] == len(given) == 9
    assert evidence["summary"]["replacements_killed"] == sum(
        a["returncode"] == -9 for a in given) >= 1
    for name in ("recovery_killed_before_payment", "recovery_killed_after_payment"):
        rows = trials[name]["final_snapshot"]["rows"]
        assert len(rows["payments"]) == 1
        assert [c["key"] for c in rows["checkpoints"]] == [rows["payments"][0]["key"]]


def test_the_grader_fails_a_mutant_passed_off_as_reference(quick):
    _, evidence = quick
    mutant = copy.deepcopy(by_name(evidence)["mutant_kill_after_payment"])
    reference = next(s for s in study.INTERVENTIONS if s.name == "kill_after_payment")
    assert study.grade(reference, mutant)["holds"] is False


def test_the_grader_fails_a_mutant_that_paid_twice_where_it_should_pass(quick):
    _, evidence = quick
    doubled = copy.deepcopy(by_name(evidence)["mutant_kill_after_payment"])
    spec = next(s for s in study.INTERVENTIONS if s.name == "mutant_uninterrupted")
    doubled["interrupted_returncode"] = None
    assert study.grade(spec, doubled)["holds"] is False


def test_the_grader_fails_a_finished_task_whose_record_was_rewritten(quick):
    _, evidence = quick
    trial = copy.deepcopy(by_name(evidence)["kill_after_checkpoint"])
    spec = next(s for s in study.INTERVENTIONS if s.name == "kill_after_checkpoint")
    assert study.grade(spec, trial)["holds"] is True
    trial["final_snapshot"]["rows"]["checkpoints"][0]["outcome"] = (
        "already_committed")  # what a worker that asked again would write
    assert study.grade(spec, trial)["holds"] is False


def test_the_grader_fails_a_reference_without_its_checkpoint(quick):
    _, evidence = quick
    trial = copy.deepcopy(by_name(evidence)["kill_after_payment"])
    trial["final_snapshot"]["rows"]["checkpoints"] = []
    trial["final_snapshot"]["checkpoints"] = 0
    spec = next(s for s in study.INTERVENTIONS if s.name == "kill_after_payment")
    assert study.grade(spec, trial)["holds"] is False


def test_progress_goes_to_stderr(quick):
    done, _ = quick
    assert done.stdout == ""
    assert done.stderr.count(": holds\n") == len(EXPECTED)
    assert "[12/12] mutant_recovery_killed_after_payment #1: holds" in done.stderr


@pytest.mark.parametrize("value", ["0", "10001", "two"])
def test_repetitions_outside_range_are_refused(value, tmp_path):
    output = tmp_path / "never.json"
    done = run("--repetitions", value, "--output", str(output))
    assert done.returncode == 2 and "--repetitions" in done.stderr
    assert not output.exists()


def test_output_is_required(tmp_path):
    assert run("--quick").returncode == 2


def test_existing_output_refused_before_any_trial(tmp_path):
    output = tmp_path / "kept.json"
    output.write_text("earlier evidence\n")
    done = run("--quick", "--output", str(output))
    assert done.returncode == 2 and "refused" in done.stderr
    assert "[1/" not in done.stderr  # no trial ran
    assert output.read_text() == "earlier evidence\n"


def test_a_trial_the_harness_cannot_finish_is_recorded_and_fails(monkeypatch):
    from crashcourse.lab.harness import BoundaryNotReached

    study = script("ch02_recovery_study")

    def exits_early(*args):
        raise BoundaryNotReached("worker exited before 'after_payment'")

    monkeypatch.setattr(study, "run_trial", exits_early)
    trials, _ = study.run_study(1)
    assert len(trials) == len(study.INTERVENTIONS)
    assert not any(t["holds"] or t["detected"] for t in trials)
    assert {t["error"] for t in trials} == {
        "BoundaryNotReached: worker exited before 'after_payment'"}
