"""The chapter 07 random-kill campaign, run for real: 200 SIGKILLs and a mutant,
then kills at random instants, then live stale holders.

25 trials of 8 kills each: every resumed run is killed again later in the
plan, so 200 kills cost 225 worker starts instead of 400. The evidence is
checked against itself (aggregates re-summed from the per-trial records) and
against the plan (where each kill must have left the journal). The instant
mode is checked against its seed (the fractions drawn), its measured span,
and both ends of the timer: a kill at once and one that comes too late. The
live stale holder is checked against its draw: which trials must show the mail
provider's late duplicate, and the drive's replay, is known before they run.
"""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from crashcourse.lab.example import restock_plan
from crashcourse.lab.harness import BoundaryTimeout, Harness
from crashcourse.workers.journal_worker import build_world
from tests.checkpoints import script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "checkpoints" / "ch07_random_kill_campaign.py"
PLAN = restock_plan()
MAILS = tuple(s.number for s in PLAN.steps if s.irreversible)  # (42, 43)
[GATE] = [s.number for s in PLAN.steps if s.gate]  # 41


def campaign(output: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--output", str(output), *flags],
        capture_output=True, text=True, timeout=600,
    )


def test_correct_probe_holds_over_200_kills(tmp_path):
    # One test, not a module fixture: under xdist each worker would rerun it.
    output = tmp_path / "correct.json"
    # A short lease: each of the 200 kills waits out the killed worker's lease
    # before the next worker starts (0.4 s, not the default 1 s: the same kills)
    done = campaign(output, "--trials", "25", "--kills", "8", "--seed", "2026",
                    "--ttl", "0.4", "--wait", "0.1")
    assert done.returncode == 0, done.stderr[-2000:]
    evidence = json.loads(output.read_text())
    summary = evidence["summary"]
    assert summary["kills"] >= 200
    assert summary["held"] == summary["trials"] == 25
    assert summary["duplicates"] == 0 and summary["end_state_differs"] == 0
    assert summary["max_in_doubt_at_kill"] == 1
    assert "25/25 trials hold -> " in done.stderr
    assert "[25/25] trial " in done.stderr
    assert evidence["parameters"]["kill_at"] == summary["kill_at"] == "boundary"
    check_aggregate(evidence)
    check_each_kill(evidence)
    check_reference(evidence)
    check_gate_refusals(evidence)


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
    stood = evidence["summary"]["kills_by_journal_state"]
    assert sum(stood.values()) == len(kills)
    # one commit per step: the step killed is in doubt from its intent on
    assert stood["a step in doubt"] >= by_boundary["after_intent"] + by_boundary[
        "after_action"] + by_boundary["after_outcome"]


def check_each_kill(evidence):
    """Each kill left the journal where the plan says, mails proved unsent."""
    for trial in evidence["trials"]:
        for kill in trial["kills"]:
            seen, step = kill["journal"], kill["step"]
            assert seen["confirmed"] + seen["in_doubt"] == seen["last_row"]
            assert seen["last_row"] in (step - 1, step)
            unsent = [n for n in MAILS if n > seen["last_row"]]
            assert seen["irreversible_not_started"] == unsent
            assert kill["mails_at_kill"] <= len(MAILS) - len(unsent)


def check_reference(evidence):
    """The uninterrupted run finished the plan: every rename, both mails sent."""
    wanted = {s.args["file_id"]: s.args["name"] for s in PLAN.steps
              if s.action == "rename"}
    assert evidence["reference"]["files"] == wanted
    assert [m[3] for m in evidence["reference"]["messages"]] == ["sent", "sent"]


def check_gate_refusals(evidence):
    """The supplier's documents trip the gate: every refusal found one under a
    planned name and left no gate row; the mails went out after the person's
    answer all the same (the end state equals the uninterrupted run's)."""
    refusals = [r for t in evidence["trials"] for k in t["kills"]
                for r in k["gate_refusals"]]
    refusals += [r for t in evidence["trials"] for r in t["resume_gate_refusals"]]
    assert len(refusals) == evidence["summary"]["gate_refusals"] > 0
    names = {s.args["name"] for s in PLAN.steps if s.action == "rename"}
    for refusal in refusals:
        assert refusal["supplier_documents"]
        assert set(refusal["supplier_documents"].values()) <= names
        assert refusal["journal"]["last_row"] < GATE


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
        # the wrong probe is asked before the intent too (a lost journal tail
        # is resolved by it), so either kill on a rename can fool it
        assert any(k["boundary"] in ("before_intent", "after_intent")
                   for k in trial["kills"])
    assert evidence["summary"]["duplicates"] == 0


def test_an_existing_output_is_refused_before_anything_runs(tmp_path):
    output = tmp_path / "kept.json"
    output.write_text("earlier evidence\n")
    done = campaign(output, "--quick")
    assert done.returncode == 2
    assert output.read_text() == "earlier evidence\n"


def test_a_trial_the_harness_cannot_finish_fails_the_campaign(monkeypatch):
    module = script("ch07_random_kill_campaign")

    def stuck(harness, directory, number, kills, world):
        raise BoundaryTimeout("worker did not reach 'step-3:after_intent' within 60 s")

    monkeypatch.setattr(module, "run_trial", stuck)
    world = module.World("unused", "task", "boundary", (), reference={})
    trials = module.run_kill_plans([[module.BoundaryKill(3, "after_intent")]], 1,
                                   world)
    summary = module.summarize(trials)
    assert summary["failed_trials"] == summary["unfinished_trials"] == [1]
    assert summary["held"] == summary["kills"] == 0
    assert summary["max_in_doubt_at_kill"] is None
    trial = trials[0]
    assert trial["error"].startswith("BoundaryTimeout: worker did not")
    assert trial["planned_kills"] == [{"step": 3, "boundary": "after_intent"}]


def test_instant_kills_are_seeded_drawn_within_the_measured_span_and_hold(tmp_path):
    output = tmp_path / "instant.json"
    done = campaign(output, "--kill-at", "instant", "--trials", "8", "--kills", "2",
                    "--seed", "11")
    assert done.returncode == 0, done.stderr[-2000:]
    evidence = json.loads(output.read_text())
    summary = evidence["summary"]
    assert evidence["parameters"]["kill_at"] == summary["kill_at"] == "instant"
    assert summary["held"] == summary["trials"] == 8
    assert summary["duplicates"] == 0 and summary["end_state_differs"] == 0
    assert len(summary["uninterrupted_s"]) == 3
    assert summary["span_s"] == max(summary["uninterrupted_s"]) > 0
    assert "kills_by_boundary" not in summary
    drawn = script("ch07_random_kill_campaign").instant_fractions(8, 2, 11)
    seeded = random.Random(11)
    assert drawn == [[seeded.random(), seeded.random()] for _ in range(8)]
    tried = [k for t in evidence["trials"] for k in t["kills"]]
    assert len(tried) == summary["kill_attempts"]
    for trial, fractions in zip(evidence["trials"], drawn, strict=True):
        kills = trial["kills"]
        assert [k["fraction"] for k in kills] == [round(u, 6) for u in
                                                  fractions[:len(kills)]]
        # a run that ended before its instant ends the killing in that trial
        assert all(k["returncode"] == -9 for k in kills[:-1])
        for kill in kills:
            assert "boundary" not in kill and kill["span_s"] == summary["span_s"]
            assert kill["planned_s"] == pytest.approx(
                kill["fraction"] * kill["span_s"], abs=1e-3)
            assert kill["returncode"] in (-9, 0)
            if kill["returncode"] == -9:  # the timer ran out first: killed after it
                assert kill["at_s"] >= kill["planned_s"]
            else:
                assert kill["journal_stood"] == "every step confirmed"
            assert kill["journal"]["in_doubt"] <= 1
    killed = [k for k in tried if k["returncode"] == -9]
    assert summary["kills"] == len(killed) > 0
    assert summary["ran_to_the_end"] == len(tried) - len(killed)
    assert sum(summary["kills_by_journal_state"].values()) == len(killed)
    assert summary["max_in_doubt_at_kill"] <= 1


@pytest.fixture
def instant_world(tmp_path):
    module = script("ch07_random_kill_campaign")
    task = build_world(str(tmp_path), PLAN)
    args = [*module.WORKER, "--dir", str(tmp_path), "--task", task, "--ttl", "1",
            "--wait", "0.25"]
    with Harness(env={"PYTHONPATH": module.SRC}) as harness:
        yield module, harness, args, str(tmp_path), task


def test_an_instant_of_zero_kills_the_worker_before_its_first_row(instant_world):
    module, harness, args, directory, task = instant_world
    kill = module.kill_at_instant(harness, args, directory, task, 0.0, 1.0)
    assert (kill["returncode"], kill["journal_stood"]) == (-9, "no row yet")
    assert kill["interrupted_step"] == 1
    assert kill["injected"] == {"step": 1, "name": PLAN.steps[0].args["name"]}


def test_an_instant_after_the_run_ends_kills_nothing(instant_world):
    module, harness, args, directory, task = instant_world
    kill = module.kill_at_instant(harness, args, directory, task, 0.5, 2 * 60.0)
    assert (kill["returncode"], kill["journal_stood"]) == (0, "every step confirmed")
    assert kill["at_s"] < kill["planned_s"] and kill["injected"] is None
    assert kill["checks"]["killed_or_ran_to_the_end"]


def test_the_kill_mode_is_one_of_two(tmp_path):
    done = campaign(tmp_path / "never.json", "--kill-at", "sometimes")
    assert done.returncode == 2 and "--kill-at" in done.stderr
    assert not (tmp_path / "never.json").exists()


def test_live_stale_holders_send_nothing_twice_but_in_the_residual_window(tmp_path):
    """The first worker stopped alive (held or frozen) after its intent or its
    admission, two replacements killed at instants, a third finishing, the
    first let go. Seed 2's draw holds every kind: after an intent (refused at
    its admission), admitted on a rename (the drive replays it) and admitted
    on the last mail (the provider gets it twice)."""
    output = tmp_path / "stale.json"
    done = campaign(output, "--stale-holder", "--trials", "4", "--kills", "2",
                    "--seed", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    evidence = json.loads(output.read_text())
    summary, trials = evidence["summary"], evidence["trials"]
    drawn = script("ch07_random_kill_campaign").stale_holders(4, 2, 2)
    assert [(t["holder"]["step"], t["holder"]["pause"], t["holder"]["stop"])
            for t in trials] == [(d.step, d.pause, d.stop) for d in drawn]
    window = [d.step for d in drawn if d.pause == "admitted" and d.step in MAILS]
    replayed = [d for d in drawn if d.pause == "admitted" and d.step < GATE]
    assert window and replayed and {d.stop for d in drawn} == {"held", "frozen"}
    assert summary["case"] == "live_stale_holder" and summary["held"] == 4
    assert summary["effects_twice"] == 0
    assert summary["late_mail_duplicates"] == len(window)
    assert [step for t in trials for step in t["late_duplicates_found_by_key"]] \
        == window
    assert summary["late_renames_replayed"] == len(replayed)
    assert summary["holder_returncodes"] == {"5": 4}  # each refused once let go
    assert summary["kills"] > 0 and summary["max_in_doubt_at_kill"] == 1


def test_stale_holders_take_at_most_three_replacement_kills(tmp_path):
    done = campaign(tmp_path / "never.json", "--stale-holder", "--kills", "4")
    assert done.returncode == 2 and "at most 3" in done.stderr
    assert not (tmp_path / "never.json").exists()


@pytest.mark.parametrize("status", ["HELD", "STALE"])
def test_a_run_that_ends_held_or_stale_is_not_started_again_and_says_why(
        tmp_path, status):
    # Issue 36: no part of a trial is retried. The run is launched once, once
    # no lease is live (here none ever was), and its end is the trial's error,
    # with the worker's own line and the journal's holder row.
    module = script("ch07_random_kill_campaign")
    task = build_world(str(tmp_path), PLAN)
    code = getattr(module, status)
    line = json.dumps({status.lower(): "its lease ran out under load"})
    launches = []

    def launch():
        launches.append(True)
        ended = module.Finished(123, code, line + "\n", "last words\n")
        return None, code, ended

    with pytest.raises(module.LeaseLost) as lost:
        module.answered(launch, str(tmp_path), task)
    assert len(launches) == 1
    said = str(lost.value)
    assert f"a worker ended {status.lower()}" in said
    assert "its lease ran out under load" in said and "last words" in said
    assert f"(exit {code}; stderr: last words)" in said
    assert "the journal's holder then:" in said
    # the same launch ending 0 is returned as it is (the control)
    assert module.answered(lambda: ("done", 0, None), str(tmp_path), task) == (
        "done", [])
    assert issubclass(module.LeaseLost, module.BoundaryNotReached)  # recorded
