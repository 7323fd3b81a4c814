"""The chapter 09 checkpoint: every case holds, and its counts are its rows.

Each number the evidence states is counted again here from the row
snapshots the case was judged from.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "checkpoints" / "ch09_kill_switch.py"
CASES = ["in_band_pause", "wedged_worker_revoked", "scheduler_stays_stopped",
         "notification_ack_gap", "resume", "unwind", "daylight"]


@pytest.fixture(scope="module")
def ch09(quick_checkpoint):
    done = quick_checkpoint(SCRIPT.stem)  # --quick, shared (conftest)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def trials(ch09):
    return {t["case"]: t for t in ch09.evidence["trials"]}


def test_every_case_ran_and_holds(ch09, trials):
    assert list(trials) == CASES
    assert all(t["holds"] and all(t["checks"].values()) for t in trials.values())
    summary = ch09.evidence["summary"]
    assert (summary["effects_after_revocation"], summary["runs_started_while_stopped"],
            summary["notifications_sent"]) == (0, 0, 1)


def admitted(rows: dict, token: str, since: float) -> int:
    renames = rows["drive"]["rename_requests"]
    messages = rows["mail"]["messages"]
    return (sum(r["credential"] == token and r["committed_at"] >= since
                for r in renames)
            + sum(m["credential"] == token and m["accepted_at"] >= since
                  for m in messages))


def test_revocation_stopped_every_effect_and_the_flag_none(trials):
    trial = trials["wedged_worker_revoked"]
    rows = trial["rows"]
    [credential] = rows["broker"]["credentials"]
    [revocation] = rows["broker"]["revocations"]
    token = credential["token"]
    assert admitted(rows, token, revocation["revoked_at"]) == 0
    assert trial["effects_after_revocation"] == 0
    paused_at = rows["control"]["runtime_control"][0]["changed_at"]
    assert paused_at == trial["flag_alone"]["paused_at"] < revocation["revoked_at"]
    flag = admitted(rows, token, paused_at)
    assert flag == trial["flag_alone"]["effects_after_flag"] > 0
    delivered = [m for m in rows["mail"]["messages"]
                 if m["accepted_at"] < revocation["revoked_at"] < m["sent_at"]]
    assert len(delivered) == trial["delivered_after_revocation"] > 0
    refusals = rows["drive"]["refusals"] + rows["mail"]["refusals"]
    assert [(r["credential"], r["reason"]) for r in refusals] == [(token, "revoked")]


def test_no_run_started_while_stopped(trials):
    trial = trials["scheduler_stays_stopped"]
    runtime, fresh = trial["rows"]["runtime"], trial["rows"]["fresh"]
    stop = next(s for s in runtime["scheduler_switch"] if s["state"] == "stopped")
    allowed = {s["seq"] for s in runtime["scheduler_switch"] if s["state"] == "running"}
    assert [r for r in runtime["runs"] if r["started_at"] >= stop["at"]] == []
    assert trial["runs_started_while_stopped"] == 0
    assert len(runtime["runs"]) == trial["runs_before_the_stop"] >= 3
    assert {r["allowed_by"] for r in runtime["runs"]} <= allowed
    assert fresh["runs"] == fresh["scheduler_switch"] == []


def test_the_owner_got_one_notification(trials):
    trial = trials["notification_ack_gap"]
    at_kill, final = trial["rows"]["at_kill"], trial["rows"]["final"]
    assert [n["state"] for n in at_kill["notifications"]] == ["pending"]
    [note] = final["notifications"]
    sent = [m for m in final["mail"]["messages"]
            if m["operation_key"] == note["operation_key"]]
    assert len(sent) == trial["notifications_sent"] == 1
    assert note["settled_by"] == "probe" and len(final["payments"]) == 1


def test_the_pause_stopped_at_a_step_boundary(trials):
    rows = trials["in_band_pause"]["rows"]
    assert [e["step"] for e in rows["entries"]] == list(range(1, 13))
    assert all(e["outcome"] is not None for e in rows["entries"])
    assert rows["mail"]["messages"] == []


def test_the_three_decisions_from_their_rows(trials):
    resumed = trials["resume"]["rows"]
    assert [d["decision"] for d in resumed["resumed"]["decisions"]] == ["resume"]
    assert resumed["refused"]["mail"]["messages"] == []
    unwound = trials["unwind"]["rows"]
    assert {f["file_id"]: f["name"] for f in unwound["drive"]["files"]} == {
        f"f{i:03d}": f"scan-{i:03d}.pdf" for i in range(1, 41)}
    assert [(u["step"], u["kind"]) for u in unwound["unwinds"]][:2] == [
        (42, "compensation"), (40, "restore")]
    daylight = trials["daylight"]
    assert daylight["handover"]["in_doubt"]["step"] == 43
    assert daylight["rows"]["at_handover"]["control"]["runtime_control"][0]["paused"]
    final = daylight["rows"]["final"]
    assert [d["decision"] for d in final["decisions"]] == ["daylight", "resume"]
    assert len(final["mail"]["messages"]) == 2


def test_an_existing_output_is_refused(ch09):
    before = ch09.output.read_bytes()
    again = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--output",
                            str(ch09.output)], capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 2 and ch09.output.read_bytes() == before
