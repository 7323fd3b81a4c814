"""Pause campaigns (issue 29): the journal worker SIGSTOPped at seeded instants
over its measured life (each one shown by the kernel to have frozen it alive)
or at the forced instant of its first mail's admission, its lease waited
out, a replacement or a person's cancel, then thawed; judged from the
services' rows. The control (the same worker with its fence taken out) runs
at the same instants and must lose: at the forced one, every time."""

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
    # At drawn instants the control breaks only when it was frozen with work
    # left (by chance); at the forced instant, every time.
    summary, returncode = campaign(tmp_path, "cancel", 4, "--renames", "15",
                                   "--forced", "2")
    assert summary["real"]["cancel"]["breaks"] == 0, summary["real"]
    assert summary["real"]["cancel"]["forced"]["breaks"] == 0, summary["real"]
    assert summary["control"]["cancel"]["forced"]["trials_broken"] == [5, 6], (
        "the control must break at every forced instant", summary["control"])
    assert summary["every_trial_froze"], "a drawn trial never froze a live worker"
    assert summary["real_holds"] and summary["control_caught"] and returncode == 0


def test_a_takeover_and_a_revocation_hold_in_the_real_worker(tmp_path):
    summary, returncode = campaign(tmp_path, "takeover,revoke", 2, "--forced", "1")
    assert summary["real"]["takeover"]["breaks"] == 0
    assert summary["real"]["revoke"]["breaks"] == 0
    assert summary["real"]["revoke"]["forced"]["breaks"] == 0
    assert summary["real_holds"]
    assert returncode == (0 if summary["control_caught"] else 1)


@pytest.mark.parametrize("repeat", [1, 2, 3])
def test_the_forced_instant_catches_the_control_every_time_and_the_fence_holds(
        tmp_path, repeat):
    # One barrier, both workers: held at the first mail's admission (checked,
    # not sent), frozen, the lease waited out, cancelled, thawed. The real
    # worker sends that one mail (the residual window, counted apart) and
    # nothing after it; the control sends every mail left after the cancel.
    template = tmp_path / "template"
    template.mkdir()
    plan = pauses.pause_plan()
    task = pauses.build(str(template), plan)
    at = pauses.forced_at(plan)
    seen = {}
    for name, module in (("real", pauses.REAL), ("control", pauses.CONTROL)):
        seen[name] = pauses.trial(repeat, "cancel", module, str(template), task,
                                  str(tmp_path / name), None, 1.0, 0.6, 0.15,
                                  stop_at=at)
        check_trial(seen[name])
        assert seen[name]["draws"] == [{"boundary": at, "landed": True,
                                        "stopped_seen_s": seen[name]["at_s"]}]
        assert seen[name]["phase"] == "in_doubt", seen[name]
    first_mail = seen["real"]["in_doubt_at_freeze"][0]["operation_key"]
    assert seen["control"]["in_doubt_at_freeze"][0]["operation_key"] == first_mail
    assert seen["real"]["breaks"] == [], seen["real"]
    assert seen["real"]["residual"] == [["send_mail", "after_cancel", first_mail]]
    later = [k for k in seen["control"]["effects"]["send_mail"] if k != first_mail]
    assert later and seen["control"]["breaks"] == [
        ["send_mail", "after_cancel", k] for k in later], seen["control"]
    assert not seen["control"]["holds"]


def check_evidence(evidence: dict, modes: list[str], trials: int) -> None:
    """Each drawn trial's fractions are its own seeded stream, the same for
    both workers, over its configuration's measured life; every draw before
    the one that froze it missed (the run had ended), measured; the summary
    counts them; each trial's verdict recounted from its rows."""
    summary, parameters = evidence["summary"], evidence["parameters"]
    assert parameters["modes"] == modes
    names = {pauses.REAL: "real", pauses.CONTROL: "control"}
    fractions = {}
    for trial in evidence["trials"]:
        name, mode = names[trial["worker"]], trial["mode"]
        life = max(parameters["uninterrupted_s"][name][pauses.world_of(mode)])
        assert trial["life_s"] == life > 0
        if trial["forced"]:
            assert trial["forced"] == parameters["forced_at"]
            assert trial["trial"] > trials and len(trial["draws"]) == 1
            continue
        stream = random.Random(f"{SEED}:{mode}:{trial['trial']}")
        drawn = [round(stream.random(), 6) for _ in trial["draws"]]
        assert [d["fraction"] for d in trial["draws"]] == drawn
        fractions.setdefault((mode, trial["trial"]), []).append(drawn)
        for d in trial["draws"]:
            assert d["planned_s"] == round(d["fraction"] * life, 4)
        assert [d["landed"] for d in trial["draws"]] == (
            [False] * (len(trial["draws"]) - 1) + [trial["paused"]])
        for d in trial["draws"]:
            assert d["landed"] == (d.get("kernel_state") in ("T", "t")), d
    for both in fractions.values():
        shorter = min(len(x) for x in both)
        assert len(both) == 2 and both[0][:shorter] == both[1][:shorter]
    for name in ("real", "control"):
        for mode in modes:
            mine = [t for t in evidence["trials"] if names[t["worker"]] == name
                    and t["mode"] == mode and not t["forced"]]
            counted = summary[name][mode]
            assert counted["drawn"] == sum(len(t["draws"]) for t in mine)
            assert counted["landed"] == sum(t["paused"] for t in mine)
            assert counted["missed"] == counted["drawn"] - counted["landed"]
    for trial in evidence["trials"]:
        check_trial(trial)
    assert evidence["manifest"]["sources_sha256"]
    assert "script/pauses.py" in evidence["sources_used"]
    assert summary["cpus"] and summary["load_before"]


def check_trial(trial):
    """Each verdict is what its rows say: recount it from the effects kept."""
    if trial["paused"]:  # frozen after the instant it was due, never before
        if not trial["forced"]:
            assert trial["at_s"] >= trial["planned_s"]
        assert trial["phase"] in ("opening", "before_claim", "in_doubt",
                                  "between_steps", "after_work")
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
        # the finishers ran (the control may wreck its own journal)
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
        # frozen at the forced instant: claimed, so the lease wait (broken) runs
        pauses.trial(1, "cancel", pauses.REAL, str(tmp_path / "t"), task,
                     str(tmp_path), None, 1.0, 0.6, 0.15,
                     stop_at=pauses.forced_at(pauses.pause_plan()))
    assert started
    for popen in started:
        assert popen.poll() is not None  # ended and reaped
        with pytest.raises(ProcessLookupError):
            os.killpg(popen.pid, 0)


@pytest.mark.parametrize("flags", [("--trials", "0"), ("--trials", "nan"),
                                   ("--seed", "-1"), ("--ttl", "0.1"),
                                   ("--forced", "-1"), ("--forced", "101"),
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
