"""The chapter 06 checkpoint: every case holds, and its counts match its rows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "checkpoints" / "ch06_worker_recovery.py"
CANCELLED = ["cancelled_while_frozen", "cancelled_while_frozen_lookup_only"]


def run_checkpoint(output: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", *extra, "--output", str(output)],
        capture_output=True, text=True, timeout=240)


def test_checkpoint_holds_and_its_counts_are_its_rows(quick_checkpoint):
    """One run (the checkpoint is the expensive part), every case checked."""
    done = quick_checkpoint(SCRIPT.stem)  # --quick, shared (conftest)
    assert done.returncode == 0, done.stderr[-3000:]
    trials = {t["case"]: t for t in done.evidence["trials"]}
    assert list(trials) == ["killed_holder", "live_stale_holder",
                            "frozen_after_admit", "lost_ack",
                            "crash_during_recovery", "fenced_at_supplier",
                            *CANCELLED]
    lease = done.evidence["summary"]["lease_configured_s"]
    for trial in trials.values():
        assert trial["holds"], trial["case"]
        lease_read_from_rows(trial, lease)
        if trial["case"] in CANCELLED:
            continue  # cancelled, not replaced: judged below
        counts_match_rows(trial)
    killed_holder(trials["killed_holder"])
    live_stale_holder(trials["live_stale_holder"])
    frozen_after_admit(trials["frozen_after_admit"])
    lost_ack(trials["lost_ack"])
    crash_during_recovery(trials["crash_during_recovery"])
    fenced_at_supplier(trials["fenced_at_supplier"])
    cancelled_while_frozen(trials["cancelled_while_frozen"])
    lookup_only(trials["cancelled_while_frozen_lookup_only"])
    output = done.output
    before = output.read_bytes()
    again = run_checkpoint(output)
    assert again.returncode == 2 and output.read_bytes() == before


def counts_match_rows(trial):
    rows = trial["rows"]
    assert trial["supplier_orders"] == len(rows["supplier"]["orders"]) == 1
    work = rows["agent"]["work"][0]
    assert trial["work_status"] == work["status"] == "DONE"
    # the supplier's one order carries the operation key the agent stored
    order = next(o for o in rows["agent"]["orders"] if o["work_id"] == work["id"])
    assert [o["operation_key"] for o in rows["supplier"]["orders"]] == [
        order["operation_key"]]
    assert trial["supplier_orders_with_key"] == 1
    refused = sorted(r["action"] for r in rows["agent"]["refusals"])
    assert trial["refused_actions_gen1"] == refused


def lease_read_from_rows(trial, configured):
    """The lease each case reports is its child's claim row, not the setting."""
    child = trial["rows"]["agent"]["claims"][0]
    assert child["generation"] == 1
    assert trial["lease_s"] == round(child["expires"] - child["claimed_at"], 3)
    assert trial["lease_s"] == configured


def killed_holder(trial):
    first, second = trial["rows"]["agent"]["claims"]
    assert trial["child_exit"] == -9 and trial["competing_claim"] is None
    assert second["claimed_at"] >= first["expires"]
    assert (first["generation"], second["generation"]) == (1, 2)
    assert [o["generation"] for o in trial["rows"]["supplier"]["orders"]] == [2]


def live_stale_holder(trial):
    assert trial["child_alive_during_replacement"] and trial["child_exit"] == 0
    transcript = trial["rows"]["agent"]["transcript"]
    assert [t["generation"] for t in transcript if "late" in t["message"]] == []
    assert trial["refused_actions_gen1"] == ["finish", "observe", "send"]


def frozen_after_admit(trial):
    """Frozen after SENDING, thawed after generation 2 finished: its request
    reaches the supplier second and is refused; one order, generation 2's."""
    assert trial["agent_order_when_frozen"] == "SENDING"
    assert trial["child_alive_during_replacement"]
    assert trial["supplier_requests_before_thaw"] == 2  # generation 2's GET, POST
    requests = trial["rows"]["supplier"]["requests"]
    assert [(r["method"], r["generation"], r["answer"]) for r in requests] == [
        ("GET", None, 404), ("POST", 2, 201), ("POST", 1, 412)]
    assert [o["generation"] for o in trial["rows"]["supplier"]["orders"]] == [2]


def crash_during_recovery(trial):
    """Two recoveries killed at their boundaries (and one at random): one
    order, sent once, by the recovery that got as far as the supplier."""
    killed = [r["killed_at"] for r in trial["recoveries"] if r["exit"] == -9]
    assert killed[:2] == ["after_sending_recorded", "before_receipt"]
    claims = trial["rows"]["agent"]["claims"]
    assert [c["generation"] for c in claims] == list(range(1, len(claims) + 1))
    assert len(claims) >= 4  # the child, two killed recoveries, the last one
    requests = trial["rows"]["supplier"]["requests"]
    assert [(r["method"], r["generation"], r["answer"])
            for r in requests if r["method"] == "POST"] == [("POST", 3, 201)]
    assert trial["proposals_after_generation_1"] == 0


def lost_ack(trial):
    assert trial["agent_order_at_kill"] == "SENDING"
    assert trial["claims_after_kill"] == ["restock", "unrelated"]
    requests = trial["rows"]["supplier"]["requests"]
    assert [r["method"] for r in requests] == ["POST", "GET"]
    assert trial["supplier_requests_before_kill"] == ["POST"]
    assert trial["supplier_requests_after_kill"] == ["GET"]


def fenced_at_supplier(trial):
    requests = trial["rows"]["supplier"]["requests"]
    posts = [(r["generation"], r["answer"]) for r in requests if r["method"] == "POST"]
    assert posts == [(2, 201), (1, 412)]


def cancelled_rows(trial):
    """The shop's and the supplier's rows of a cancel case: the work
    CANCELLED, one claim (the frozen child's), the child's order; the
    supplier's requests as (method, generation, answer)."""
    agent, remote = trial["rows"]["agent"], trial["rows"]["supplier"]
    [work] = agent["work"]
    assert work["status"] == trial["work_status"] == "CANCELLED"
    assert [c["generation"] for c in agent["claims"]] == [1]
    assert work["generation"] == 2  # the cancel's: nobody holds it
    [order] = agent["orders"]
    assert order["status"] == trial["agent_order_status"]
    requests = [(r["method"], r["generation"], r["answer"])
                for r in remote["requests"]]
    assert [tuple(r) for r in trial["supplier_requests"]] == requests
    return order, remote, requests


def cancelled_while_frozen(trial):
    """Fence, then lookup, while the child is frozen: its late POST is
    refused and the supplier holds no order for the cancelled work."""
    order, remote, requests = cancelled_rows(trial)
    assert requests == [("FENCE", 2, 200), ("GET", None, 404), ("POST", 1, 412)]
    assert [tuple(r) for r in trial["supplier_requests_before_thaw"]] == requests[:2]
    assert remote["orders"] == [] and order["status"] == "REVOKED"
    assert not trial["negative_control"]


def lookup_only(trial):
    """The negative control at the same barrier: no fence, the lookup's
    NOT_FOUND, then the thawed POST is placed for cancelled work."""
    order, remote, requests = cancelled_rows(trial)
    assert requests == [("GET", None, 404), ("POST", 1, 201)]
    assert [o["operation_key"] for o in remote["orders"]] == [order["operation_key"]]
    assert trial["negative_control"]
