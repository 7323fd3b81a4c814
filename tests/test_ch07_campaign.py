"""The chapter 07 random-kill campaign, run for real: 200 SIGKILLs and a mutant.

25 trials of 8 kills each: every resumed run is killed again later in the
plan, so 200 kills cost 225 worker starts instead of 400. The evidence is
checked against itself (aggregates re-summed from the per-trial records) and
against the plan (where each kill must have left the journal).
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from crashcourse.example import restock_plan
from crashcourse.harness import BoundaryTimeout

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "checkpoints" / "ch07_random_kill_campaign.py"


def campaign(output: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--output", str(output), *flags],
        capture_output=True, text=True, timeout=600,
    )


def test_correct_probe_holds_over_200_kills(tmp_path):
    # One test, not a module fixture: under xdist each worker would rerun it.
    output = tmp_path / "correct.json"
    done = campaign(output, "--trials", "25", "--kills", "8", "--seed", "2026")
    assert done.returncode == 0, done.stderr[-2000:]
    evidence = json.loads(output.read_text())
    summary = evidence["summary"]
    assert summary["kills"] >= 200
    assert summary["held"] == summary["trials"] == 25
    assert summary["duplicates"] == 0 and summary["end_state_differs"] == 0
    assert summary["max_in_doubt_at_kill"] == 1
    assert "25/25 trials hold -> " in done.stderr
    assert "[25/25] trial " in done.stderr
    check_aggregate(evidence)
    check_each_kill(evidence)
    check_reference(evidence)


def check_aggregate(evidence):
    """The summary is the sum of the per-trial records."""
    kills = [k for trial in evidence["trials"] for k in trial["kills"]]
    assert len(kills) == evidence["summary"]["kills"]
    assert all(k["returncode"] == -9 for k in kills)
    by_boundary = evidence["summary"]["kills_by_boundary"]
    assert sum(by_boundary.values()) == len(kills)
    assert all(count > 0 for count in by_boundary.values())
    probed = sum(t["journal_after"]["resolved_by"]["probe"]
                 for t in evidence["trials"])
    assert probed == evidence["summary"]["resolved_by_probe"] > 0


def check_each_kill(evidence):
    """Each kill left the journal where the plan says, mails proved unsent."""
    for trial in evidence["trials"]:
        for kill in trial["kills"]:
            seen, step = kill["journal"], kill["step"]
            assert seen["confirmed"] + seen["in_doubt"] == seen["last_row"]
            assert seen["last_row"] in (step - 1, step)
            unsent = [n for n in (41, 42) if n > seen["last_row"]]
            assert seen["irreversible_not_started"] == unsent
            assert kill["mails_at_kill"] <= 2 - len(unsent)


def check_reference(evidence):
    """The uninterrupted run finished the plan: every rename, both mails sent."""
    plan = restock_plan()
    wanted = {s.args["file_id"]: s.args["name"] for s in plan.steps
              if s.action == "rename"}
    assert evidence["reference"]["files"] == wanted
    assert [m[3] for m in evidence["reference"]["messages"]] == ["sent", "sent"]


def test_the_filename_only_probe_is_caught_and_named(tmp_path):
    output = tmp_path / "mutant.json"
    done = campaign(output, "--trials", "8", "--kills", "2", "--seed", "7",
                    "--probe", "filename-only")
    assert done.returncode == 1
    evidence = json.loads(output.read_text())
    failed = evidence["summary"]["failed_trials"]
    assert failed
    for number in failed:
        assert f"FAILED trial {number} " in done.stderr
        trial = evidence["trials"][number - 1]
        assert trial["files_differing"]  # a rename the probe wrongly believed
        assert any(k["boundary"] == "after_intent" for k in trial["kills"])
    assert evidence["summary"]["duplicates"] == 0


def test_an_existing_output_is_refused_before_anything_runs(tmp_path):
    output = tmp_path / "kept.json"
    output.write_text("earlier evidence\n")
    done = campaign(output, "--quick")
    assert done.returncode == 2
    assert output.read_text() == "earlier evidence\n"


def test_a_trial_the_harness_cannot_finish_fails_the_campaign(monkeypatch):
    spec = importlib.util.spec_from_file_location("ch07_campaign", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def stuck(number, kills, probe, world):
        raise BoundaryTimeout("worker did not reach 'step-3:after_intent' within 60 s")

    monkeypatch.setattr(module, "run_trial", stuck)
    run = module.run_trials([[(3, "after_intent")]], "correct", 1, {"reference": {}})
    summary = module.summarize(run["trials"])
    assert summary["failed_trials"] == summary["unfinished_trials"] == [1]
    assert summary["held"] == summary["kills"] == 0
    assert summary["max_in_doubt_at_kill"] is None
    trial = run["trials"][0]
    assert trial["error"].startswith("BoundaryTimeout: worker did not")
    assert trial["planned_kills"] == [{"step": 3, "boundary": "after_intent"}]
