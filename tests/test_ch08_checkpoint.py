"""The chapter 08 checkpoint: every case holds, and its numbers are its rows."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "checkpoints" / "ch08_workflow_recovery.py"
QUICK = ["after_remote:mail", "waiting_for_approval", "cancel:after_remote:mail",
         "naive:before_remote:mail"]


@pytest.fixture(scope="module")
def quick(quick_checkpoint):
    done = quick_checkpoint(SCRIPT.stem)  # --quick, shared (conftest)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def trials(quick) -> dict:
    return {t["case"]: t for t in quick.evidence["trials"]}


def test_the_quick_cases_run_and_hold(trials):
    assert list(trials) == QUICK
    assert all(t["holds"] for t in trials.values())


def test_every_count_is_read_again_from_the_rows(trials):
    for trial in trials.values():
        rows = trial["rows"]["final"]
        ops = Counter(r["operation_key"] for r in rows["supplier"]["requests"]
                      if r["method"] == "POST")
        ops.update(p["key"] for p in rows["payments"])
        ops.update(m["operation_key"] for m in rows["mail"])
        assert trial["service_ops"] == dict(ops), trial["case"]
        after = max(h["version"] for h in
                    trial["rows"]["at_interruption"]["worker"]["workflow_history"])
        writers = {h["who"] for h in rows["worker"]["workflow_history"]
                   if h["version"] > after}
        assert trial["winners"] == len(writers), trial["case"]
        [workflow_row] = rows["worker"]["workflows"]
        assert trial["final_state"] == workflow_row["state"]


def test_one_recovery_worker_wins_and_the_other_exits_cleanly(trials):
    trial = trials["after_remote:mail"]
    assert trial["interrupted"]["returncode"] == -9
    workers = sorted(trial["recovery_workers"], key=lambda w: w["transitions_won"])
    assert [w["exit_code"] for w in workers] == [3, 0]
    assert workers[0]["transitions_won"] == 0 and workers[1]["transitions_won"] > 0
    assert workers[0]["report"]["refused"] == "stale_version"
    assert trial["winners"] == 1 and set(trial["service_ops"].values()) == {1}
    assert trial["final_state"] == "applied"


def test_the_cancel_explains_every_effect(trials):
    trial = trials["cancel:after_remote:mail"]
    assert trial["person"]["transitions_won"] == 1 and trial["person"]["fixture"]
    [worker] = trial["recovery_workers"]
    assert (worker["exit_code"], worker["transitions_won"]) == (3, 0)
    fate = {c["step"]: (c["action"], c["status"]) for c in trial["compensation"]}
    assert fate == {"reserve": ("released", "undone"),
                    "charge": ("refund_owed", "needs_person"),
                    "mail": ("cannot_unsend", "cannot_undo")}
    released = trial["rows"]["final"]["supplier"]["releases"]
    assert [r["operation_key"] for r in released] == [
        trial["compensation"][0]["compensation_key"]]
    assert trial["final_state"] == "cancelled"


def test_the_draft_is_caught_sending_twice(trials):
    trial = trials["naive:before_remote:mail"]
    assert trial["mutant"] and trial["winners"] == 2
    assert sorted(trial["service_ops"].values()) == [1, 1, 2]


def test_fixtures_are_labelled_apart_from_measurements(trials):
    for trial in trials.values():
        assert trial["labels"]["fixture"], trial["case"]
        assert "service_ops" in trial["labels"]["measured"]
    assert any("approves" in label for label in
               trials["waiting_for_approval"]["labels"]["fixture"])


def test_an_existing_output_is_refused(quick):
    before = quick.output.read_bytes()
    again = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--output",
                            str(quick.output)], capture_output=True, text=True,
                           timeout=240)
    assert again.returncode == 2 and quick.output.read_bytes() == before
