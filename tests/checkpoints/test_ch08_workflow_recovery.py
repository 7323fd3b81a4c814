"""The chapter 08 checkpoint: every case holds, and its numbers are its rows."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "checkpoints" / "ch08_workflow_recovery.py"
QUICK = ["after_remote:mail", "waiting_for_approval", "cancel:admitted:mail",
         "cancel:frozen:admitted:mail",
         "live_stale_holder:before_remote:mail", "live_stale_holder:admitted:mail",
         "crash_during_recovery", "naive:before_remote:mail",
         "unleased:live_stale_holder:before_remote:mail",
         "old_rule:cancel:frozen:admitted:mail"]


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
                      if r["method"] == "POST" and r["answer"] == 201)
        ops.update(p["key"] for p in rows["payments"])
        ops.update(m["operation_key"] for m in rows["mail"])
        assert trial["records_per_key"] == dict(ops), trial["case"]
        mails = Counter(m["operation_key"] for m in rows["mail"])
        assert trial["mail_late_duplicates"] == sum(n - 1 for n in mails.values())
        after = max(h["version"] for h in
                    trial["rows"]["at_interruption"]["worker"]["workflow_history"])
        writers = {h["who"] for h in rows["worker"]["workflow_history"]
                   if h["version"] > after
                   and h["who"] in {w["who"] for w in trial["workers"]} | {"person"}}
        assert trial["winners"] == len(writers), trial["case"]
        [workflow_row] = rows["worker"]["workflows"]
        assert trial["final_state"] == workflow_row["state"]


def test_one_recovery_worker_wins_after_the_dead_holders_lease(trials):
    trial = trials["after_remote:mail"]
    workers = sorted(trial["workers"], key=lambda w: w["transitions_won"])
    assert [w["transitions_won"] > 0 for w in workers] == [False, True]
    assert workers[0]["report"]["refused"] == "stale_version"
    assert trial["winners"] == 1 and set(trial["records_per_key"].values()) == {1}
    # the winner's first write came after worker-1's attempt's lease ended
    rows = trial["rows"]["final"]["worker"]
    history = {h["version"]: h for h in rows["workflow_history"]}
    [held] = [r for r in rows["workflow_steps"] if r["phase"] == "attempt"
              and history[r["version"]]["who"] == "worker-1" and r["step"] == "mail"]
    first_write = min(h["at"] for h in rows["workflow_history"]
                      if h["who"] == workers[1]["who"])
    assert first_write >= held["expires"]


def test_a_call_in_flight_stays_in_doubt_until_it_can_be_known(trials):
    trial = trials["cancel:admitted:mail"]
    early = trial["compensated_while_held"]
    assert early["in_doubt"] == ["mail"]
    assert {c["step"] for c in early["compensations"]} == {"reserve", "charge"}
    fate = {c["step"]: (c["action"], c["status"]) for c in trial["compensation"]}
    assert fate == {"reserve": ("released", "undone"),
                    "charge": ("refund_owed", "needs_person"),
                    "mail": ("cannot_unsend", "cannot_undo")}
    assert len(trial["rows"]["final"]["mail"]) == 1  # sent after the cancel
    released = trial["rows"]["final"]["supplier"]["releases"]
    assert [r["operation_key"] for r in released] == [
        trial["compensation"][0]["compensation_key"]]


def mail_rows(trial) -> tuple[str | None, int]:
    """From the final rows: the mail step's compensation status, and the
    messages the provider holds."""
    rows = trial["rows"]["final"]
    status = next((c["status"] for c in rows["worker"]["compensations"]
                   if c["step"] == "mail"), None)
    return status, len(rows["mail"])


def test_a_frozen_admitted_mail_stays_in_doubt_until_a_probe_finds_it(trials):
    """worker-1 SIGSTOPped at admitted:mail: in doubt while its lease lived
    and after it (nothing found yet); thawed, it mails; the last
    compensation's probe records the sent mail: the report is true."""
    trial = trials["cancel:frozen:admitted:mail"]
    assert trial["interrupted"]["pause"] == "SIGSTOP" and not trial["mutant"]
    assert trial["while_held_lease_left_s"] > 0
    early_rows = trial["compensated_while_held"]["compensations"]
    assert early_rows and all(c["at"] < trial["mail_lease_end"] for c in early_rows)
    for early in (trial["compensated_while_held"], trial["compensated_after_lease"]):
        assert early["in_doubt"] == ["mail"]
        assert {c["step"] for c in early["compensations"]} == {"reserve", "charge"}
    # the second compensation came after the mail attempt's lease, on the
    # store's clock: its rows' times against the attempt row's lease
    worker = trial["rows"]["final"]["worker"]
    history = {h["version"]: h for h in worker["workflow_history"]}
    [attempt] = [r for r in worker["workflow_steps"] if r["step"] == "mail"
                 and r["phase"] == "attempt" and history[r["version"]]["who"]
                 == "worker-1"]
    assert attempt["admitted_at"] is not None
    mail_row = next(c for c in worker["compensations"] if c["step"] == "mail")
    assert mail_row["at"] > attempt["expires"]
    assert trial["mail_lease_end"] == attempt["expires"]
    assert trial["mail_before_thaw"] == 0
    assert mail_rows(trial) == ("cannot_undo", 1)
    assert trial["final_report"]["in_doubt"] == []
    assert "mail" not in trial["final_report"]["not_done"]


def test_the_old_rule_writes_off_a_mail_the_thawed_holder_then_sends(trials):
    """The negative control at the same barrier: nothing_to_undo at once,
    then the provider holds the message: the record is false for good."""
    trial = trials["old_rule:cancel:frozen:admitted:mail"]
    assert trial["mutant"] and trial["interrupted"]["pause"] == "SIGSTOP"
    assert trial["mail_before_thaw"] == 0
    assert mail_rows(trial) == ("nothing_to_undo", 1)
    assert "mail" in trial["final_report"]["not_done"]


def test_a_frozen_holder_sends_late_only_from_the_residual_window(trials):
    before = trials["live_stale_holder:before_remote:mail"]
    inside = trials["live_stale_holder:admitted:mail"]
    assert before["interrupted"]["pause"] == inside["interrupted"]["pause"] == "SIGSTOP"
    assert sorted(before["records_per_key"].values()) == [1, 1, 1]
    assert before["duplicate_detected_by_probe"] is False
    assert sorted(inside["records_per_key"].values()) == [1, 1, 2]
    assert inside["residual"] and inside["mail_late_duplicates"] == 1
    assert inside["duplicate_detected_by_probe"] is True
    for trial in (before, inside):
        twice = trial["effects_twice"]
        assert twice["reserve"] == twice["charge"] == 0


def test_recovery_killed_again_and_again_still_records_each_key_once(trials):
    trial = trials["crash_during_recovery"]
    assert len(trial["killed_recoveries"]) == 2
    assert set(trial["records_per_key"].values()) == {1}
    assert len(trial["records_per_key"]) == 3 and trial["final_state"] == "applied"


def test_the_drafts_are_caught_sending_twice(trials):
    naive = trials["naive:before_remote:mail"]
    assert naive["mutant"] and naive["winners"] == 2
    assert sorted(naive["records_per_key"].values()) == [1, 1, 2]
    unleased = trials["unleased:live_stale_holder:before_remote:mail"]
    assert unleased["mutant"] and unleased["mail_late_duplicates"] == 1
    assert unleased["final_report"]["in_doubt"] == []  # the report cannot tell


def test_fixtures_are_labelled_apart_from_measurements(trials):
    for trial in trials.values():
        assert trial["labels"]["fixture"], trial["case"]
        assert "records_per_key" in trial["labels"]["measured"]
    assert any("approves" in label for label in
               trials["waiting_for_approval"]["labels"]["fixture"])


def test_an_existing_output_is_refused(quick):
    before = quick.output.read_bytes()
    again = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--output",
                            str(quick.output)], capture_output=True, text=True,
                           timeout=240)
    assert again.returncode == 2 and quick.output.read_bytes() == before


def test_an_unknown_case_is_refused(tmp_path):
    refused = subprocess.run([sys.executable, str(SCRIPT), "--cases", "no-such",
                              "--output", str(tmp_path / "out.json")],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and not (tmp_path / "out.json").exists()
