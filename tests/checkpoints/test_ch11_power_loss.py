"""The chapter 11 checkpoint: every trial holds, and its counts are its points.

Each count a trial states is counted again here from the crash points it
was judged from: the payments acknowledged before each point and what each
image held.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "checkpoints" / "ch11_power_loss.py"
FIELDS = {"case", "mode", "model", "crash_points", "acknowledged_lost", "corrupt",
          "double_charges", "holds"}
SERVICE_MODES = ["WAL+FULL", "WAL+NORMAL", "DELETE+FULL", "DELETE+EXTRA", "WAL+OFF"]
MODELS = ["synced_only", "unsynced_subsets"]


@pytest.fixture(scope="module")
def ch11(quick_checkpoint):
    done = quick_checkpoint(SCRIPT.stem)  # --quick, shared (conftest)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def trials(ch11):
    return ch11.evidence["trials"]


def find(trials, case: str, mode: str, model: str = "synced_only") -> dict:
    [trial] = [t for t in trials if (t["case"], t["mode"], t["model"])
               == (case, mode, model)]
    return trial


def test_every_trial_ran_holds_and_says_what_it_counted(trials):
    assert [(t["mode"], t["model"]) for t in trials if t["case"] == "service"] == [
        (mode, model) for mode in SERVICE_MODES for model in MODELS]
    assert {t["case"] for t in trials} == {
        "service", "service_per_call", "as_shipped", "pay_then_checkpoint",
        "journal", "journal_blind"}
    for trial in trials:
        assert FIELDS <= set(trial), trial["case"]
        assert trial["holds"] is True and all(trial["checks"].values())


def recounted(trial: dict) -> dict:
    """A payment trial's counts, from its points alone."""
    counts = {"images": 0, "acknowledged_lost": 0, "corrupt": 0,
              "double_charges": 0}
    for point in trial["points"]:
        for seen in point["verdicts"]:
            verdict, images = seen["verdict"], seen["images"]
            counts["images"] += images
            if verdict["corrupt"]:
                counts["corrupt"] += images
                continue
            counts["double_charges"] += images * verdict["double_charges"]
            if set(point["acknowledged"]) - set(verdict["paid"]):
                counts["acknowledged_lost"] += images
    return counts


def test_every_payment_count_is_its_points(trials):
    for trial in trials:
        if trial["case"].startswith("journal"):
            continue
        assert [p["point"] for p in trial["points"]] == list(
            range(trial["crash_points"]))
        assert trial["crash_points"] == sum(trial["disk_calls"].values()) + 1
        assert recounted(trial) == {name: trial[name] for name in (
            "images", "acknowledged_lost", "corrupt", "double_charges")}


def test_every_journal_loss_is_a_commit_made_before_its_point(trials):
    for trial in (t for t in trials if t["case"].startswith("journal")):
        lost = 0
        for point in trial["points"]:
            made = point["acknowledged"]
            for seen in point["verdicts"]:
                rows = dict(seen["verdict"]["rows"])
                missing = ([n for n in made["intents"] if n not in rows]
                           + [n for n in made["outcomes"] if rows.get(n) is False])
                lost += seen["images"] * bool(missing)
        assert lost == trial["acknowledged_lost"]


def test_full_keeps_every_acknowledged_payment_and_normal_does_not(trials):
    for model in MODELS:
        full = find(trials, "service", "WAL+FULL", model)
        normal = find(trials, "service", "WAL+NORMAL", model)
        assert (full["acknowledged_lost"], full["corrupt"]) == (0, 0)
        assert normal["acknowledged_lost"] > 0 and normal["corrupt"] == 0
    sampled = find(trials, "service", "WAL+FULL", "unsynced_subsets")
    assert sampled["images"] > sampled["crash_points"]
    assert 0 < sampled["sampled_points"] == sum(
        p["sampled"] for p in sampled["points"]) < sampled["crash_points"]


def test_the_vanished_payment_had_been_acknowledged(trials):
    trial = find(trials, "service", "WAL+NORMAL")
    loss = trial["first_loss"]
    point = trial["points"][loss["point"]]
    assert set(loss["lost"]) <= set(point["acknowledged"])
    assert not any(set(loss["lost"]) <= set(seen["verdict"]["paid"])
                   for seen in point["verdicts"])


def test_the_system_of_record_is_the_side_that_needs_the_fsync(trials):
    safe = find(trials, "pay_then_checkpoint", "service WAL+FULL, worker WAL+NORMAL")
    assert (safe["double_charges"], safe["acknowledged_lost"],
            safe["unpaid_after_resume"]) == (0, 0, 0)
    unsafe = find(trials, "pay_then_checkpoint",
                  "service WAL+NORMAL, worker WAL+FULL")
    assert unsafe["unpaid_after_resume"] > 0 and unsafe["double_charges"] == 0


def test_deletion_and_its_folder_sync_decide_delete_mode(trials):
    assert find(trials, "service", "DELETE+FULL")["acknowledged_lost"] > 0
    assert find(trials, "service", "DELETE+EXTRA")["acknowledged_lost"] == 0
    assert find(trials, "service", "DELETE+FULL")["disk_calls"]["delete"] > 0


def test_the_cost_sits_beside_what_each_level_loses(ch11):
    evidence = ch11.evidence
    cost = evidence["cost"]
    assert set(cost) == {"FULL", "NORMAL"}
    assert all(c["us_per_commit"] > 0 for c in cost.values())
    assert evidence["summary"]["us_per_commit"] == {
        level: c["us_per_commit"] for level, c in cost.items()}
    assert evidence["apsw"]["sqlite"].count(".") == 2


def test_the_runtime_as_shipped_asks_full_for_the_service_and_loses_nothing(trials):
    shipped = [t for t in trials if t["case"] == "as_shipped"]
    assert len(shipped) >= 3
    for trial in shipped:
        assert trial["asked"]["payments.sqlite"] == ["FULL"]
        assert trial["asked"].get("worker.sqlite", ["NORMAL"]) == ["NORMAL"]
        assert recounted(trial)["acknowledged_lost"] == 0
        assert trial["double_charges"] == trial["corrupt"] == 0


def test_the_runtime_refuses_what_is_damaged_and_nothing_else(trials):
    """Counted again from each image's verdict: the runtime's own open
    (``refused``) against the judge's integrity check (``corrupt``)."""
    torn = 0
    for trial in trials:
        for point in trial["points"]:
            for seen in point["verdicts"]:
                verdict = seen["verdict"]
                assert (verdict["refused"] is not None) is verdict["corrupt"], (
                    trial["case"], trial["mode"], point["point"])
                torn += seen["images"] * verdict["corrupt"]
    assert torn > 0  # WAL+OFF tore some: the check had something to refuse


def test_a_blind_probe_sends_twice_what_the_journal_no_longer_held(trials):
    [blind] = [t for t in trials if t["case"] == "journal_blind"]
    silent = sum(seen["images"] for point in blind["points"]
                 for seen in point["verdicts"]
                 if not seen["verdict"]["corrupt"]
                 and seen["verdict"]["twice_not_in_doubt"])
    assert silent == blind["twice_without_doubt"] > 0
    seeing = find(trials, "journal", "journal WAL+NORMAL, services WAL+FULL")
    assert seeing["double_charges"] == seeing["twice_without_doubt"] == 0
