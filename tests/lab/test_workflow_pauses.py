"""Pause campaigns of chapter 08's workflow worker (issue 29): SIGSTOPped at
seeded instants over its measured life (each one shown by the kernel to have
frozen it alive) or at the forced instant of its mail's attempt, then a
recovery or the person's cancel, thawed; effects counted from the supplier's,
the payment service's and the mail provider's rows. The control (its draft
``unleased`` mode: no lease, no admission) must lose at the forced instant,
every time, where the real worker holds."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from crashcourse.lab import pauses, workflow_pauses
from crashcourse.lab.harness import Harness

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_pauses.py"
SEED = 2026


@pytest.mark.parametrize("mode", workflow_pauses.MODES)
def test_the_forced_instant_catches_the_control_and_the_real_worker_holds(
        tmp_path, mode):
    seen = {}
    with Harness() as harness:
        for variant in (workflow_pauses.REAL, workflow_pauses.CONTROL):
            seen[variant] = workflow_pauses.trial(
                harness, str(tmp_path / variant), 1, mode, variant, None,
                stop_at=workflow_pauses.FORCED_AT)
    real, control = seen[workflow_pauses.REAL], seen[workflow_pauses.CONTROL]
    for trial in (real, control):
        assert trial["paused"] and trial["draws"][0]["kernel_state"] == "T", trial
        assert trial["phase"] == "attempted:mail", "frozen before its admission"
        assert trial["admitted_at_freeze"] == [], "nothing admitted at the barrier"
    assert real["breaks"] == [] and real["residual"] == [], real
    assert real["effects"].get(mail_key(real), 0) == (1 if mode == "takeover" else 0)
    mail_break = ["twice" if mode == "takeover" else "after_cancel", "mail",
                  mail_key(control)]
    assert mail_break in control["breaks"], control
    assert not control["holds"]
    if mode == "cancel":  # the compensation said the mail was never sent
        assert ["report_false", "mail", mail_key(control)] in control["breaks"]
        assert real["final_report"]["not_done"] == ["mail"]


def mail_key(trial: dict) -> str:
    return next(k for k in trial["effects"] if "/mail/" in k) if any(
        "/mail/" in k for k in trial["effects"]) else "none"


def test_a_campaign_records_each_draw_and_what_the_rows_say(tmp_path):
    output = tmp_path / "workflow.json"
    done = subprocess.run([sys.executable, str(BENCH), "--worker", "workflow",
                           "--trials", "1", "--forced", "1", "--output", str(output)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1) and output.exists(), done.stderr[-2000:]
    evidence = json.loads(output.read_text())
    summary, parameters = evidence["summary"], evidence["parameters"]
    for trial in evidence["trials"]:
        if trial["forced"]:
            assert trial["forced"] == parameters["forced_at"]
            continue
        stream = random.Random(f"{SEED}:workflow:{trial['mode']}:{trial['trial']}")
        assert [d["fraction"] for d in trial["draws"]] == [
            round(stream.random(), 6) for _ in trial["draws"]]
        assert [d["landed"] for d in trial["draws"]] == (
            [False] * (len(trial["draws"]) - 1) + [trial["paused"]])
        for d in trial["draws"]:
            assert d["landed"] == (d.get("kernel_state") in ("T", "t")), d
            assert d["life_s"] > 0  # measured just before, a run of its own
            assert d["planned_s"] == round(d["fraction"] * d["life_s"], 4)
    for trial in evidence["trials"]:
        if trial["paused"]:
            recount(trial)
    assert summary["real_holds"], summary["real"]
    assert summary["control_caught_at_every_forced"], summary["control"]
    assert done.returncode == (0 if summary["every_trial_froze"] else 1)
    assert "script/bench_pauses.py" in evidence["sources_used"]


def recount(trial: dict) -> None:
    """Each verdict from the effects it kept: a key held twice is named."""
    twice = sorted(k for k, n in trial["effects"].items() if n > 1)
    assert twice == sorted(b[2] for b in trial["breaks"] + trial["residual"]
                           if b[0] == "twice")
    admitted = {a["operation_key"] for a in trial["admitted_at_freeze"]}
    assert all(b[2] in admitted or trial["mode"] == "cancel"
               for b in trial["residual"])
    assert trial["holds"] == (not trial["breaks"])


def test_bad_worker_is_refused(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH), "--worker", "nobody",
                           "--output", str(tmp_path / "x.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and not (tmp_path / "x.json").exists()
    assert pauses.MODES  # the journal campaign's modes stay its own


class Rows:
    """A world's two reads, as the judge sees them (no processes)."""

    def __init__(self, effects: dict, state: str, keys: dict):
        self.effects, self.state, self.keys = effects, state, keys

    def rows(self) -> dict:
        requests = [{"method": "POST", "answer": 201, "operation_key": k}
                    for k, n in self.effects.items() if "/reserve" in k
                    for _ in range(n)]
        mails = [{"operation_key": k} for k, n in self.effects.items()
                 if "/mail/" in k for _ in range(n)]
        return {"supplier": {"requests": requests}, "payments": [], "mail": mails}

    def steps(self) -> dict:
        steps = [{"step": s, "operation_key": k} for s, k in self.keys.items()]
        return {"workflow": {"state": self.state, "version": 7}, "steps": steps}


KEYS = {"reserve": "w/1/reserve/a", "charge": "w/2/charge/b", "mail": "w/3/mail/c"}
RELEASE = "w/reserve/release/d"


def test_the_judge_names_late_twice_and_false_reports_and_spares_the_undo():
    world = Rows({KEYS["reserve"]: 1, RELEASE: 1, KEYS["mail"]: 2}, "cancelled", KEYS)
    seen = workflow_pauses.judge(
        {"final_report": {"not_done": ["mail"]}}, world, {KEYS["reserve"]: 1}, [])
    assert seen["breaks"] == [["twice", "mail", KEYS["mail"]],
                              ["after_cancel", "mail", KEYS["mail"]],
                              ["report_false", "mail", KEYS["mail"]]], seen
    assert not seen["holds"]  # the person's release after the cancel is no break
    admitted = [{"step": "mail", "operation_key": KEYS["mail"]}]
    seen = workflow_pauses.judge(
        {"final_report": {"not_done": []}}, world, {KEYS["reserve"]: 1}, admitted)
    assert seen["breaks"] == [] and seen["holds"]
    assert seen["residual"] == [["twice", "mail", KEYS["mail"]],
                                ["after_cancel", "mail", KEYS["mail"]]]
