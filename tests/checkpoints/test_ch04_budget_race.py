"""The chapter 04 checkpoint: what its evidence must say, from rows."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checkpoints import script

ROOT = Path(__file__).resolve().parents[2]
CH04 = ROOT / "checkpoints" / "ch04_budget_race.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def ch04(quick_checkpoint):
    done = quick_checkpoint(CH04.stem)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.evidence


def test_ch04_race_has_one_winner_per_repetition(ch04):
    races = [t for t in ch04["trials"] if t["trial"] == "race"]
    assert len(races) == ch04["summary"]["race_repetitions"] >= 1
    for race in races:
        keys = race["final"]["keys"]
        assert race["committed"] == 1 and race["refused"] == 1
        assert [f"pay-{w}" for w in race["winner"]] == [k for k in keys if "racer" in k]
        assert race["final"]["checkpointed_tasks"] == race["winner"]
        assert race["final"]["budget"]["charged_actions"] == len(keys) == 2
        (loser,) = set(race["exit_statuses"]) - set(race["winner"])
        assert race["exit_statuses"] == {race["winner"][0]: 0, loser: 3}
        assert race["reports"][loser]["reason"] == "budget_action_limit"


def test_ch04_the_read_first_mutant_pays_twice_at_the_same_barrier(ch04):
    """The negative control: the same race from the same barrier
    (``before_payment``), the budget counted before the lock. Nothing holds it
    in its gap, so a double payment shows the racers really overlapped; the
    reference, raced the same way, never paid twice."""
    mutant = [t for t in ch04["trials"] if t["trial"] == "race_read_first"]
    assert len(mutant) == ch04["summary"]["race_repetitions"]
    assert ch04["summary"]["read_first_races_with_two_commits"] >= 1
    assert ch04["summary"]["races_with_two_commits"] == 0
    races = [t for t in ch04["trials"] if t["trial"] == "race"]
    assert {t["barrier"] for t in mutant} == {t["barrier"] for t in races} \
        == {"before_payment"}
    for race in mutant:
        assert race["holds"]
        if race["committed"] == 2:
            assert race["final"]["keys"] == ["pay-earlier", "pay-racer-a",
                                              "pay-racer-b"]
            assert race["final"]["budget"]["remaining_actions"] == -1
            assert race["final"]["checkpointed_tasks"] == ["racer-a", "racer-b"]


def test_ch04_mutant_judge_fails_rows_that_disagree(ch04):
    """A mutant trial holds only when its rows agree: a payer without its
    checkpoint, or a payment the budget never charged, fails its judge."""
    checkpoint = script(CH04.stem)
    race = next(t for t in ch04["trials"] if t["trial"] == "race")
    assert all(checkpoint.judge_mutant_race(race["final"])[2].values())
    lost = copy.deepcopy(race["final"])
    lost["checkpointed_tasks"] = []
    assert not checkpoint.judge_mutant_race(lost)[2]["only_the_payers_checkpointed"]
    uncharged = copy.deepcopy(race["final"])
    uncharged["budget"]["remaining_actions"] += 1
    assert not checkpoint.judge_mutant_race(uncharged)[2]["every_payment_charged"]


def test_ch04_race_judge_fails_a_loser_that_checkpointed(ch04):
    race = next(t for t in ch04["trials"] if t["trial"] == "race")
    checkpoint = script(CH04.stem)
    assert all(checkpoint.judge_race(race["final"])[2].values())
    both = copy.deepcopy(race["final"])
    both["checkpointed_tasks"] = list(checkpoint.RACERS)
    assert not checkpoint.judge_race(both)[2]["only_the_winner_checkpointed"]


def test_ch04_kill_points(ch04):
    trials = {t["trial"]: t for t in ch04["trials"]}
    before, after = trials["kill_before_commit"], trials["kill_after_commit"]
    assert before["at_kill"]["keys"] == [] and after["at_kill"]["keys"] == ["pay-4101"]
    assert before["at_kill"]["budget"]["charged_actions"] == 0
    assert after["at_kill"]["budget"]["charged_actions"] == 1
    for trial in (before, after):
        assert trial["interrupted_returncode"] == -9
        assert trial["final"]["budget"]["remaining_actions"] == 0
        assert trial["final"]["keys"] == ["pay-4101"]
        assert trial["fresh_key_report"]["reason"] == "budget_action_limit"
        assert trial["exit_statuses"] == {"replacement": 0, "fresh_key": 3}


def test_ch04_a_fresh_key_refused_for_another_reason_fails(ch04):
    trial = next(t for t in ch04["trials"] if t["trial"] == "kill_after_commit")
    checkpoint = script(CH04.stem)
    judged = [trial["kill_at"], trial["interrupted_returncode"], trial["at_kill"],
              trial["after_resume"], trial["fresh_key_report"], trial["final"]]
    assert all(checkpoint.judge_kill(*judged).values())
    judged[4] = {**trial["fresh_key_report"], "reason": "approval_revoked"}
    assert not checkpoint.judge_kill(*judged)["fresh_key_refused_by_budget"]


@pytest.mark.parametrize("value", ["0", "10001", "many"])
def test_ch04_repetitions_out_of_range_are_refused(tmp_path, value):
    output = tmp_path / "evidence.json"
    done = run(CH04, "--repetitions", value, "--output", output)
    assert done.returncode == 2 and not output.exists()
    assert "--repetitions: must be a whole number from 1 to 10000" in done.stderr
