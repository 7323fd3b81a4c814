"""Pause campaigns (issue 29): the journal worker SIGSTOPped at seeded instants
over its measured life, its lease waited out, a replacement or a person's
cancel, then thawed; judged from the services' rows. The control (the same
worker with its fence taken out) runs at the same instants and must lose."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from crashcourse.lab import pauses
from crashcourse.services import mail

SEED = 2026


def run(*flags: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "crashcourse.lab.pauses", *flags],
                          capture_output=True, text=True, timeout=timeout)


def campaign(tmp_path, mode: str, trials: int, *flags: str) -> tuple[dict, int]:
    output = tmp_path / "pauses.json"
    done = run("--trials", str(trials), "--seed", str(SEED), "--mode", mode,
               "--output", str(output), *flags)
    assert done.returncode in (0, 1) and output.exists(), done.stderr[-2000:]
    evidence = json.loads(output.read_text())
    check_evidence(evidence, mode.split(","), trials)
    return evidence["summary"], done.returncode


def test_a_cancel_holds_in_the_real_worker_and_the_control_is_caught(tmp_path):
    # The control breaks whenever it was frozen between its claim and its last
    # effect. With the evidence's 3 renames, start-up is most of a loaded
    # machine's life (3 of 20 broke at load 25); 15 renames make the work
    # most of it, so most of the 10 instants land there.
    summary, returncode = campaign(tmp_path, "cancel", 10, "--renames", "15")
    assert summary["real"]["cancel"]["breaks"] == 0, summary["real"]
    assert summary["control"]["cancel"]["trials_broken"], summary["control"]
    assert summary["real_holds"] and summary["control_caught"] and returncode == 0


def test_a_takeover_and_a_revocation_hold_in_the_real_worker(tmp_path):
    summary, returncode = campaign(tmp_path, "takeover,revoke", 2)
    assert summary["real"]["takeover"]["breaks"] == 0
    assert summary["real"]["revoke"]["breaks"] == 0
    assert summary["real_holds"]
    assert returncode == (0 if summary["control_caught"] else 1)


def check_evidence(evidence: dict, modes: list[str], trials: int) -> None:
    """The seeded draw over the measured life, the same instants for both
    workers, and each trial's verdict recounted from its rows."""
    summary, parameters = evidence["summary"], evidence["parameters"]
    assert parameters["modes"] == modes
    assert parameters["span_s"] == max(parameters["uninterrupted_s"]) > 0
    seeded = random.Random(SEED)
    drawn = [round(seeded.random() * parameters["span_s"], 6)
             for _ in range(trials)]
    assert parameters["instants_s"] == drawn
    for worker in (pauses.REAL, pauses.CONTROL):
        for mode in modes:
            mine = [t for t in evidence["trials"]
                    if t["worker"] == worker and t["mode"] == mode]
            assert [round(t["planned_s"], 4) for t in mine] == [round(x, 4)
                                                                for x in drawn]
    for trial in evidence["trials"]:
        check_trial(trial)
    assert evidence["manifest"]["sources_sha256"]
    assert "script/pauses.py" in evidence["sources_used"]
    assert summary["cpus"] and summary["load_before"]


def check_trial(trial):
    """Each verdict is what its rows say: recount it from the effects kept."""
    if trial["paused"]:  # frozen after the instant it was due, never before
        assert trial["at_s"] >= trial["planned_s"]
        holder = trial["holder_at_freeze"]
        if holder and holder["status"] == "RUNNING":  # its lease was waited out
            assert trial["lease_wait_s"] >= 0
    effects = trial["effects"]
    for kind, keys in effects.items():
        assert trial["twice"][kind] == sorted({k for k in keys if keys.count(k) > 1})
    if trial["mode"] in pauses.STOPS and trial["paused"]:
        assert trial["work_status"] == "CANCELLED"  # the cancel's row stands
        if not trial["after_cancel_by_stamp"]:
            for kind, keys in effects.items():
                before = trial["effects_at_cancel"][kind]
                assert keys[:len(before)] == before
                assert trial["after_cancel"][kind] == keys[len(before):]
    elif trial["worker"] == pauses.REAL and trial["paused"]:
        # the finishers ran (an unpaused run that lost its short lease on a
        # loaded machine has none; the control may wreck its own journal)
        assert trial["work_status"] == "DONE", trial
    doubt = {d["operation_key"] for d in trial.get("in_doubt_at_freeze") or []}
    doubt |= {d["operation_key"] for d in (trial.get("in_doubt_at_cancel") or [])
              if isinstance(d, dict)}
    assert all(key not in doubt for _, _, key in trial["breaks"])
    assert all(key in doubt for _, _, key in trial["residual"])
    assert trial["holds"] == (not trial["breaks"])


def test_a_second_mail_under_a_key_not_in_doubt_is_a_break(tmp_path):
    task = pauses.build(str(tmp_path), pauses.pause_plan())
    where = pauses.paths(str(tmp_path))
    for _ in range(2):
        mail.submit(where["mail"], "a@shop.example", "s", "b",
                    {mail.KEY_HEADER: "k-1"})
    seen = pauses.judge({}, str(tmp_path), task, [], None)
    assert seen["breaks"] == [["send_mail", "twice", "k-1"]] and not seen["holds"]
    doubt = [{"operation_key": "k-1", "step": 5}]
    seen = pauses.judge({}, str(tmp_path), task, doubt, None)
    assert seen["residual"] == [["send_mail", "twice", "k-1"]] and seen["holds"]


def test_a_trial_that_fails_leaves_no_process_behind(tmp_path, monkeypatch):
    (tmp_path / "t").mkdir()
    task = pauses.build(str(tmp_path / "t"), pauses.pause_plan())
    started = []
    real_init = pauses.Process.__init__

    def keep(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        started.append(self.popen)

    def broken(*args, **kwargs):
        raise AssertionError("the grader failed")

    monkeypatch.setattr(pauses.Process, "__init__", keep)
    monkeypatch.setattr(pauses, "lease_ran_out", broken)
    monkeypatch.setattr(pauses, "judge", broken)
    with pytest.raises(AssertionError, match="grader failed"):
        # frozen at 0.25 s: claimed, so the lease wait (broken) runs
        pauses.trial(1, "cancel", pauses.REAL, str(tmp_path / "t"), task,
                     str(tmp_path), 0.25, 0.6, 0.15)
    assert started
    for popen in started:
        assert popen.poll() is not None  # ended and reaped
        with pytest.raises(ProcessLookupError):
            os.killpg(popen.pid, 0)


@pytest.mark.parametrize("flags", [("--trials", "0"), ("--trials", "nan"),
                                   ("--seed", "-1"), ("--ttl", "0.1"),
                                   ("--wait", "0.6"), ("--mode", "sometimes"),
                                   ("--mode", "cancel,cancel"), ("--mode", ""),
                                   ("--renames", "0"), ("--renames", "41")])
def test_bad_options_are_refused_before_anything_runs(tmp_path, flags):
    output = tmp_path / "never.json"
    done = run("--output", str(output), *flags, timeout=60)
    assert done.returncode == 2, done.stderr
    assert not output.exists()


def test_an_existing_output_is_refused_and_kept(tmp_path):
    output = tmp_path / "kept.json"
    output.write_text("earlier\n")
    done = run("--output", str(output), "--trials", "1", timeout=60)
    assert done.returncode == 2 and output.read_text() == "earlier\n"
