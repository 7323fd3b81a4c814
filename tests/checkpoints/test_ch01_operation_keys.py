"""checkpoints/ch01_operation_keys.py: evidence that agrees with its own rows."""

import argparse
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from crashcourse.lab.harness import BoundaryTimeout
from tests.checkpoints import script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "checkpoints" / "ch01_operation_keys.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def quick_run(quick_checkpoint):
    done = quick_checkpoint("ch01_operation_keys")
    assert done.output.exists(), done.stderr[-2000:]
    return done, done.evidence


def test_quick_run_exits_0_and_every_trial_holds(quick_run):
    done, document = quick_run
    assert done.returncode == 0, done.stderr
    assert document["schema"] == "crashcourse.ch01.operation_keys/1"
    assert "script/ch01_operation_keys.py" in document["manifest"]["sources_sha256"]
    names = [trial["intervention"] for trial in document["trials"]]
    assert names == list(script("ch01_operation_keys").INTERVENTIONS)
    assert all(trial["holds"] is True for trial in document["trials"])
    summary = document["summary"]
    assert summary["held"] == summary["trials"] == len(names)
    assert summary["all_held"] is True


def counted_from(rows):
    """The counts a snapshot's copied rows give, for comparing with the counts
    the checkpoint took by its own queries (a second read of the file)."""
    return {
        "restock_notes": len(rows["restock_notes"]),
        "effect_ledger": len(rows["effect_ledger"]),
        "on_order": sum(row["on_order"] for row in rows["stock"]),
        "ledger_payloads": [json.loads(r["payload"]) for r in rows["effect_ledger"]],
    }


def test_counts_in_the_evidence_are_the_counts_of_its_snapshots(quick_run):
    _, document = quick_run
    for trial in document["trials"]:
        assert trial["final_counts"] == counted_from(trial["final_snapshot"])
        if trial["boundary"] is not None:
            assert trial["counts_at_interruption"] == counted_from(
                trial["snapshot_at_interruption"])
            assert trial["interrupted_returncode"] == -9
            assert trial["interrupted_pid"] not in trial["resumed_pids"]
    per = document["summary"]["per_intervention"]
    assert per["naive_kill_after_commit"]["final_notes"] == [2]
    assert per["kill_after_commit"]["final_notes"] == [1]


def test_the_judge_fails_a_duplicate_note(quick_run):
    _, document = quick_run
    checkpoint = script("ch01_operation_keys")
    naive = next(t for t in document["trials"]
                 if t["intervention"] == "naive_kill_after_commit")
    relabelled = copy.deepcopy(naive)  # two notes, as if the reference had made them
    assert not checkpoint.judge("kill_after_commit", relabelled)


def test_the_judge_fails_a_conflict_that_moved_a_row(quick_run):
    _, document = quick_run
    checkpoint = script("ch01_operation_keys")
    refused = next(t for t in document["trials"]
                   if t["intervention"] == "changed_payload_after_commit")
    moved = copy.deepcopy(refused)
    moved["final_snapshot"]["restock_notes"][0]["text"] = "48 cartons"
    assert checkpoint.judge("changed_payload_after_commit", refused)
    assert not checkpoint.judge("changed_payload_after_commit", moved)


def test_an_existing_output_is_refused_before_anything_runs(tmp_path):
    output = tmp_path / "evidence.json"
    output.write_text("earlier evidence\n")
    done = run("--quick", "--output", str(output))
    assert done.returncode == 2
    assert "never overwritten" in done.stderr
    assert "holds" not in done.stderr and "[1/" not in done.stderr  # no trial ran
    assert output.read_text() == "earlier evidence\n"


@pytest.mark.parametrize("repetitions", ["0", "10001", "two"])
def test_repetitions_outside_1_to_10000_are_refused(tmp_path, repetitions):
    output = tmp_path / "evidence.json"
    done = run("--repetitions", repetitions, "--output", str(output))
    assert done.returncode == 2
    assert "--repetitions: must be a whole number from 1 to 10000" in done.stderr
    assert not output.exists()


def test_a_trial_the_harness_cannot_finish_is_recorded_and_fails_the_run(monkeypatch):
    checkpoint = script("ch01_operation_keys")

    def never_reaches(*args, **kwargs):
        raise BoundaryTimeout("worker did not reach 'after_commit'")

    monkeypatch.setattr(checkpoint, "kill_and_resume", never_reaches)
    summary, trials = checkpoint.run(argparse.Namespace(quick=True))
    trial = next(t for t in trials if t["intervention"] == "kill_after_commit")
    assert trial["holds"] is False
    assert trial["error"].startswith("BoundaryTimeout: worker did not reach")
    assert (trial["repetition"], trial["mutant"], trial["expected_notes"]) == (
        1, False, 1)  # which trial it was, kept
    assert trial["final_counts"]["restock_notes"] == 0  # read from the real rows
    assert summary["all_held"] is False
    # the uninterrupted runs never called the stand-in: they still hold
    assert [t["intervention"] for t in trials if t["holds"]] == [
        "uninterrupted", "race_two_processes"]
