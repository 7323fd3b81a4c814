"""A checkpoint's evidence drawn as timelines (crashcourse.figures.evidence):
what is drawn comes from the evidence's rows, so changing a row changes the
picture; and the command's answers to bad input (issue 32)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from crashcourse.figures import evidence

CH06 = evidence.read_evidence(
    __import__("pathlib").Path(__file__).parent / "data"
    / "ch06_worker_recovery_quick.json")


def by_case(document: dict, case: str) -> dict:
    return next(t for t in document["trials"] if t["case"] == case)


def drawn(document: dict) -> dict:
    return {name: (lanes, events) for name, lanes, events
            in evidence.evidence_trials(document)}


def test_every_trial_of_the_evidence_is_drawn_with_its_verdict():
    names = list(drawn(CH06))
    assert names == [f"{t['case']} held" for t in CH06["trials"]]


def test_the_lanes_are_the_claim_rows_and_the_marks_their_instants():
    trial = by_case(CH06, "killed_holder")
    lanes, events = evidence.trial_timeline(trial)
    claims = trial["rows"]["agent"]["claims"]
    assert [(lane, start, end) for lane, start, end, _ in lanes] == [
        (f"gen {c['generation']} ({c['owner']})", c["claimed_at"], c["expires"])
        for c in claims]
    posts = [r for r in trial["rows"]["supplier"]["requests"]]
    assert ("supplier: requests", posts[0]["at"],
            f"{posts[0]['method']} {posts[0]['answer']} gen {posts[0]['generation']}"
            ) in events
    assert ("the parent", trial["killed_at_unix"], "killed") in events


def test_the_parents_moments_are_drawn():
    trial = by_case(CH06, "cancelled_while_frozen")
    _, events = evidence.trial_timeline(trial)
    assert [(a, w) for lane, a, w in events if lane == "the parent"] == [
        (m["at"], m["what"]) for m in trial["moments"]]
    assert {m["what"] for m in trial["moments"]} == {"freeze", "cancel", "thaw"}


def test_changing_a_row_changes_the_picture():
    """The negative control: the figure follows the rows, not a literal."""
    changed = copy.deepcopy(CH06)
    request = by_case(changed, "fenced_at_supplier")["rows"]["supplier"]["requests"]
    late = next(r for r in request if r["answer"] == 412)
    late["answer"] = 201  # as if the supplier had let the stale POST in
    before, after = drawn(CH06), drawn(changed)
    name = "fenced_at_supplier held"
    assert before != after
    labels = {label for _, _, label in after[name][1]}
    assert any("POST 201 gen 1" in label for label in labels)
    assert not any("POST 201 gen 1" in label for _, _, label in before[name][1])
    # and a claim row moved moves its lane
    claim = by_case(changed, "killed_holder")["rows"]["agent"]["claims"][1]
    claim["claimed_at"] += 0.25
    assert drawn(changed)["killed_holder held"][0] != before["killed_holder held"][0]


CROWDED = [(0.0, "start"), (0.1, "at step-10:after_outcome"), (0.16, "killed"),
           (0.22, "supplier's file"), (1.0, "start"),
           (1.06, "at step-21:before_intent"), (1.12, "killed"),
           (2.0, "exit 3, gate refused"), (2.06, "start"), (2.5, "exit 0")]


def test_no_label_covers_another_on_a_crowded_lane():
    """Chapter 07's kills: many marks close together on the parent's lane.
    Each label gets a row where it fits; drawn, no two boxes overlap and
    every one stays inside its axes."""
    pytest.importorskip("matplotlib")
    base = 1.8e9
    document = {"trials": [{"case": "crowded", "moments": [
        {"what": what, "at": base + t} for t, what in CROWDED]}]}
    [(_, lanes, events)] = evidence.evidence_trials(document)
    rows = [row for *_, row, _ in evidence.label_rows(events, 500, 0, 3, 6.9)]
    assert max(rows) > 0, "the case is not crowded: every label fits one row"
    fig = evidence.draw(document)
    fig.draw_without_rendering()
    [ax] = fig.axes
    inside = ax.get_window_extent()
    boxes = [text.get_window_extent() for text in ax.texts]
    assert len(boxes) == len(events)
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                if a.overlaps(b)], "two labels drawn on top of each other"
    assert all(inside.x0 <= b.x0 and b.x1 <= inside.x1 and b.y1 <= inside.y1
               for b in boxes), "a label leaves its axes"


def test_no_label_covers_another_across_lanes():
    """Chapter 06's eight trials, up to six lanes each: the rows of one lane's
    labels stay below the next lane's."""
    pytest.importorskip("matplotlib")
    fig = evidence.draw(CH06)
    fig.draw_without_rendering()
    for ax in fig.axes:
        boxes = [text.get_window_extent() for text in ax.texts]
        assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                    if a.overlaps(b)], f"{ax.get_title()}: two labels overlap"


def test_the_title_stays_above_the_first_trial_however_tall():
    """24 trials (the most drawn) make a figure over 80 inches tall: its title
    is placed in the strip the layout leaves at the top, not a fraction of
    the height down, inside the first trial."""
    pytest.importorskip("matplotlib")
    document = {"trials": CH06["trials"] * 3}
    fig = evidence.draw(document, title="crashcourse.ch07.random_kill_campaign/3")
    fig.draw_without_rendering()
    first = fig.axes[0].get_tightbbox()  # its own title included
    assert fig._suptitle.get_window_extent().y0 >= first.y1


def test_a_trial_without_instants_is_left_out():
    document = {"trials": [{"case": "counts only", "holds": True, "orders": 1}]}
    assert evidence.evidence_trials(document) == []
    assert evidence.draw(document) is None


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "crashcourse.figures.evidence",
                           *argv], capture_output=True, text=True, timeout=120)


def test_the_command_writes_the_pictures_beside_the_evidence(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "ch06.json"
    path.write_text(json.dumps(CH06))
    done = run(str(path), "--format", "png")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ch06.png").stat().st_size > 0
    assert not (tmp_path / "ch06.svg").exists()


@pytest.mark.parametrize(("text", "said"), [
    (None, "no such file"), ("{", "not JSON"), ("[1, 2]", "no list of trials")])
def test_bad_input_is_one_line_and_exit_2(tmp_path, text, said):
    path = tmp_path / "e.json"
    if text is not None:
        path.write_text(text)
    done = run(str(path))
    assert done.returncode == 2
    assert said in done.stderr and done.stderr.count("\n") == 1
    assert not list(tmp_path.glob("*.png"))


def test_nothing_to_draw_is_exit_1(tmp_path):
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"trials": [{"case": "x", "orders": 1}]}))
    done = run(str(path))
    assert done.returncode == 1 and "no trial records an instant" in done.stderr


def test_help():
    done = run("--help")
    assert done.returncode == 0 and "EVIDENCE" in done.stdout.upper()
