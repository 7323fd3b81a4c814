"""The chapter 09 checkpoint: every case holds, and its counts are its rows.

Each number the evidence states is counted again here from the row
snapshots the case was judged from: effects against their COMMIT stamps and
the broker's ``revoked_at``, runs against the switch, mails by key.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "checkpoints" / "ch09_kill_switch.py"
CASES = ["in_band_pause", "wedged_worker_revoked", "revocation_naive",
         "live_stale_holder:held_in_write", "live_stale_holder:frozen_in_write",
         "live_stale_holder:frozen_after_admission", "scheduler_stays_stopped",
         "notification_ack_gap", "resume", "unwind", "daylight"]
HOLDER = "journal-worker"


@pytest.fixture(scope="module")
def ch09(quick_checkpoint):
    done = quick_checkpoint(SCRIPT.stem)  # --quick, shared (conftest)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def trials(ch09):
    return {t["case"] + (f":{t['variant']}" if "variant" in t else ""): t
            for t in ch09.evidence["trials"]}


def test_every_case_ran_and_holds(ch09, trials):
    assert list(trials) == CASES
    assert all(t["holds"] and all(t["checks"].values()) for t in trials.values())
    summary = ch09.evidence["summary"]
    assert (summary["effects_after_revocation"], summary["runs_started_while_stopped"],
            summary["notifications_sent"], summary["effects_committed_overnight"],
            summary["effects_after_revocation_naive"]) == (0, 0, 1, 0, 1)
    assert summary["effects_after_revocation_stale_holder"] == [0, 0, 0]


def committed_after(rows: dict, token: str, since: float) -> list:
    """Effects under ``token`` whose COMMIT stamp is at or after ``since``."""
    return ([r for r in rows["drive"]["rename_requests"]
             if r["credential"] == token and r["committed_at"] >= since]
            + [m for m in rows["mail"]["messages"]
               if m["credential"] == token and m["accepted_at"] >= since])


def test_revocation_stopped_every_commit_and_the_flag_none(trials):
    trial = trials["wedged_worker_revoked"]
    rows = trial["rows"]
    [credential] = rows["broker"]["credentials"]
    [revocation] = rows["broker"]["revocations"]
    token = credential["token"]
    assert committed_after(rows, token, revocation["revoked_at"]) == []
    assert trial["effects_after_revocation"] == 0
    paused_at = rows["control"]["runtime_control"][0]["changed_at"]
    assert paused_at == trial["flag_alone"]["paused_at"] < revocation["revoked_at"]
    flag = len(committed_after(rows, token, paused_at))
    assert flag == trial["flag_alone"]["effects_after_flag"] > 0
    delivered = [m for m in rows["mail"]["messages"]
                 if m["accepted_at"] < revocation["revoked_at"] < m["sent_at"]]
    assert len(delivered) == trial["delivered_after_revocation"] > 0
    refusals = rows["drive"]["refusals"] + rows["mail"]["refusals"]
    assert [(r["credential"], r["reason"]) for r in refusals] == [(token, "revoked")]


def test_the_naive_check_lets_a_commit_through_and_the_count_sees_it(trials):
    """The negative control: the same count, on the draft that verifies in a
    transaction of its own, finds the rename committed after ``revoked_at``."""
    trial = trials["revocation_naive"]
    rows = trial["rows"]
    [credential] = rows["broker"]["credentials"]
    [revocation] = rows["broker"]["revocations"]
    [late] = [r for r in rows["drive"]["rename_requests"]
              if r["committed_at"] >= revocation["revoked_at"]]
    assert (late["file_id"], late["name"]) == ("f001", "late.pdf")
    assert credential["token"] == revocation["token"]
    assert trial["effects_committed_after_revocation"] == 1


@pytest.mark.parametrize("variant", ["held_in_write", "frozen_in_write",
                                     "frozen_after_admission"])
def test_a_live_stale_holder_commits_nothing_after_the_revocation(trials, variant):
    """From the rows alone: the holder's first credential, the broker's stamp
    of its revocation, the services' commit stamps; then the steps done once."""
    trial = trials[f"live_stale_holder:{variant}"]
    rows = trial["rows"]
    stale = rows["broker"]["credentials"][0]["token"]  # issued first: the holder's
    [revoked_at] = {r["revoked_at"] for r in rows["broker"]["revocations"]
                    if r["token"] == stale}
    assert revoked_at == trial["revoked_at"]
    assert committed_after(rows, stale, revoked_at) == []
    assert trial["effects_committed_after_revocation"] == 0
    keys = [m["operation_key"] for m in rows["mail"]["messages"]]
    assert len(keys) == len(set(keys)) == 2  # the two summaries, once each
    pairs = [(r["file_id"], r["name"]) for r in rows["drive"]["rename_requests"]]
    assert len(pairs) == len(set(pairs)) == 40
    refused = [(r["credential"], r["reason"]) for r in
               rows["drive"]["refusals"] + rows["mail"]["refusals"]]
    if variant == "frozen_after_admission":  # its late mail met the revocation
        assert refused == [(stale, "revoked")]
        [grant] = [c for c in rows["broker"]["credentials"] if c["token"] != stale]
        assert {m["credential"] for m in rows["mail"]["messages"]} == {grant["token"]}
    if variant == "frozen_in_write":  # killed in its write: nothing of it landed
        assert not any(r["credential"] == stale
                       for r in rows["drive"]["rename_requests"])
    if variant == "held_in_write":  # the write it held landed before the stamp
        [held] = [r for r in rows["drive"]["rename_requests"]
                  if r["file_id"] == "f040"]
        assert held["credential"] == stale and held["committed_at"] < revoked_at


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
        **{f"f{i:03d}": f"scan-{i:03d}.pdf" for i in range(1, 41)},
        "f007": "kept-by-the-owner.pdf"}
    assert [(u["step"], u["kind"]) for u in unwound["unwinds"]][:2] == [
        (42, "compensation"), (40, "restore")]
    [left] = [u for u in unwound["unwinds"] if u["step"] == 7]
    assert left["outcome"]["left_as_found"]["name"] == "kept-by-the-owner.pdf"


def test_the_handover_stopped_the_holder_out_of_band(trials):
    """Overnight the flag was lifted by hand and the worker started with the
    credential it had: the provider refused it, from its own rows, and no
    credential was issued until the morning's grant."""
    daylight = trials["daylight"]
    at_handover = daylight["rows"]["at_handover"]
    overnight, final = daylight["rows"]["overnight"], daylight["rows"]["final"]
    [night] = at_handover["broker"]["credentials"]
    [revoked] = at_handover["broker"]["revocations"]
    assert revoked["token"] == night["token"] and night["holder"] == HOLDER
    assert at_handover["control"]["runtime_control"][0]["paused"]
    assert overnight["broker"]["credentials"] == at_handover["broker"]["credentials"]
    assert [(r["credential"], r["reason"]) for r in overnight["mail"]["refusals"]
            ] == [(night["token"], "revoked")]
    assert committed_after(overnight, night["token"], revoked["revoked_at"]) == []
    assert len(overnight["mail"]["messages"]) == 1
    assert daylight["handover"]["in_doubt"]["step"] == 43
    assert [d["decision"] for d in final["decisions"]] == ["daylight", "resume"]
    keys = [m["operation_key"] for m in final["mail"]["messages"]]
    assert len(keys) == len(set(keys)) == 2


def test_an_existing_output_is_refused(ch09):
    before = ch09.output.read_bytes()
    again = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--output",
                            str(ch09.output)], capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 2 and ch09.output.read_bytes() == before
