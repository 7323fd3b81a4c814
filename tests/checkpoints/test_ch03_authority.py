"""The chapter 03 checkpoint: what its evidence must say, from rows."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from tests.checkpoints import script

ROOT = Path(__file__).resolve().parents[2]
CH03 = ROOT / "checkpoints" / "ch03_authority.py"


@pytest.fixture(scope="module")
def ch03(quick_checkpoint):
    done = quick_checkpoint(CH03.stem)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.evidence


def test_ch03_revocation_before_and_after_payment(ch03):
    trials = {t["intervention"]: t for t in ch03["trials"]}
    before, after = trials["revoke_before_payment"], trials["revoke_after_payment"]
    assert before["final_snapshot"]["payments"] == 0
    assert before["resumed_report"]["reason"] == "approval_revoked"
    assert after["final_snapshot"]["payments"] == 1
    assert after["resumed_report"]["outcome"] == "already_committed"
    assert after["fresh_key_report"]["reason"] == "approval_revoked"
    revoked = after["final_snapshot"]["rows"]["approvals"][0]["revoked"]
    assert revoked == 1  # a replay does not restore the approval


def test_ch03_every_intervention_was_killed_and_holds(ch03):
    assert all(t["interrupted_returncode"] == -9 for t in ch03["trials"])
    assert ch03["summary"]["held"] == len(ch03["trials"]) >= 4
    assert ch03["summary"]["quick"] is True
    for trial in ch03["trials"]:
        for name in ("snapshot_at_interruption", "snapshot_after_resume",
                     "final_snapshot"):
            seen = trial[name]
            # counts by count(*) in a second read; rows copied by another
            assert seen["payments"] == len(seen["rows"]["payments"])
            assert seen["checkpoints"] == len(seen["rows"]["checkpoints"])


def test_ch03_the_grader_fails_a_replacement_that_paid_after_revocation(ch03):
    checkpoint = script(CH03.stem)
    trial = copy.deepcopy({t["intervention"]: t for t in ch03["trials"]}[
        "revoke_before_payment"])
    spec = next(i for i in checkpoint.INTERVENTIONS
                if i.name == "revoke_before_payment")
    args = (spec, trial["interrupted_returncode"], trial["snapshot_at_interruption"],
            trial["change"], trial["resumed_report"], trial["snapshot_after_resume"],
            trial["fresh_key_report"], trial["final_snapshot"])
    assert checkpoint.grade(*args)["holds"] is True
    paid = copy.deepcopy(trial["final_snapshot"])
    paid["payments"] = 1  # as if the replacement had charged the revoked order
    assert checkpoint.grade(*args[:-1], paid)["holds"] is False


