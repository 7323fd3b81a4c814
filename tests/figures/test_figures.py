"""The book's figures show what the chapters say they show: counts on whole
ticks, failures drawn as failures, labels that can be read, fixed sizes."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from matplotlib.colors import to_rgb  # noqa: E402

from crashcourse import figures

BAD = to_rgb(figures.COLOURS["bad"])


def red(artist) -> bool:
    """Drawn in the colour of failure (whatever its transparency)."""
    if hasattr(artist, "get_facecolor"):
        return to_rgb(artist.get_facecolor()) == BAD
    return to_rgb(artist.get_color()) == BAD


def drawn(fig):
    """Lay the figure out as the notebook will, so ticks and texts are final."""
    fig.draw_without_rendering()
    return fig


def ticks_are_whole(axis) -> bool:
    low, high = axis.get_view_interval()
    shown = [t for t in axis.get_majorticklocs() if low <= t <= high]
    return len(shown) >= 2 and all(float(t).is_integer() for t in shown)


def texts(ax) -> list:
    return [t for t in ax.texts if t.get_visible()]


def test_grouped_bars_of_counts_have_whole_ticks_and_numbers():
    fig = drawn(figures.grouped_bars({"charged": {"a": 1, "b": 2}, "left": {"a": 1}},
                                   "t", "payments"))
    assert ticks_are_whole(fig.axes[0].yaxis)
    numbers = [t.get_text() for t in texts(fig.axes[0])]
    assert sorted(numbers) == ["0", "1", "1", "2"]  # "left" has none at "b": a 0


def test_grouped_bars_of_measurements_keep_their_ticks():
    fig = drawn(figures.grouped_bars({"cost": {"a": 0.4, "b": 1.3}}, "t", "ms"))
    assert not ticks_are_whole(fig.axes[0].yaxis)
    assert texts(fig.axes[0]) == []


def kill_and_end(**change):
    at_kill = {"none": None, "before": 0, "after": 1, "draft": 1}
    at_end = {"none": 1, "before": 1, "after": 1, "draft": 2, **change}
    units = ({k: None if v is None else 24 * v for k, v in at_kill.items()},
             {k: 24 * v for k, v in at_end.items()})
    return drawn(figures.kill_and_end(at_kill, at_end, (1, "one note"), "t", "notes",
                                    twin=("units", 24, *units)))


def test_kill_and_end_counts_on_whole_ticks_and_in_numbers():
    fig = kill_and_end()
    notes, units = fig.axes
    assert ticks_are_whole(notes.yaxis)
    assert set(units.get_yticks()) <= {0, 24, 48, 72, 96}
    words = [t.get_text() for t in texts(notes)]
    assert words.count("0") == 1  # a zero bar is invisible: its number is not
    assert words.count("no kill") == 1  # a case without a kill says so


def test_kill_and_end_draws_the_count_above_the_line_in_red():
    bars = kill_and_end().axes[0].patches
    assert [b.get_height() for b in bars if red(b)] == [2]
    assert [b for b in kill_and_end(draft=1).axes[0].patches if red(b)] == []


def campaign(held_third: bool):
    groups = {"correct": {"trial 1": True, "trial 2": True},
              "wrong": {"trial 1": True, "trial 2": held_third}}
    kills = [("correct", "trial 1", 4, "doubt"), ("correct", "trial 2", 0, "none"),
             ("wrong", "trial 1", 4, "doubt"), ("wrong", "trial 2", 4, "doubt"),
             ("wrong", "trial 2", 4, "doubt")]
    return drawn(figures.kill_map(groups, kills, {"none": "idle", "doubt": "doubt"},
                                span=(0, 43)))


def test_kill_map_draws_a_failed_trial_as_a_failure():
    ax = campaign(held_third=False).axes[0]
    failed = [t for t in texts(ax) if t.get_text() == "FAILED"]
    assert [t.get_text() for t in texts(ax)].count("held") == 3
    assert len(failed) == 1 and red(failed[0])
    bands = [p for p in ax.patches if red(p)]
    assert len(bands) == 1  # the failed trial's line, and only it, on red


def test_kill_map_without_failures_draws_no_failure():
    ax = campaign(held_third=True).axes[0]
    assert "FAILED" not in [t.get_text() for t in texts(ax)]
    assert not ax.patches


def test_kill_map_draws_every_kill_even_two_at_one_place():
    ax = campaign(held_third=False).axes[0]
    marks = [(x, y) for line in ax.lines if line.get_marker() not in ("None", "")
             for x, y in line.get_xydata()]
    assert len(marks) == 5 and len(set(marks)) == 5


def test_kill_map_size_depends_on_the_trials_not_the_verdicts():
    assert (campaign(True).get_size_inches() == campaign(False).get_size_inches()).all()


def test_timeline_labels_of_close_events_do_not_overlap():
    fig = drawn(figures.timeline(
        [("first", 0, 54, "bad"), ("replacement", 54, 112, "ok")],
        [("first", 53, "held at after_payment"), ("first", 54, "SIGKILL"),
         ("replacement", 112, "exit 0")]))
    boxes = [t.get_window_extent() for t in texts(fig.axes[0])]
    assert len(boxes) == 3
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    inside = fig.axes[0].get_window_extent()
    assert all(inside.x0 <= b.x0 and b.x1 <= inside.x1 for b in boxes)


def test_state_grid_writes_who_won_in_each_cell():
    rows, columns = ["race 1", "race 2"], ["racer-a", "racer-b"]
    won = {"race 1": "racer-a", "race 2": "racer-b"}
    cells = {(r, c): "ok" if won[r] == c else "idle" for r in rows for c in columns}
    words = {(r, c): "paid" if won[r] == c else "not paid"
             for r in rows for c in columns}
    ax = drawn(figures.state_grid(rows, columns, cells, "race", labels=words)).axes[0]
    assert sorted(t.get_text() for t in texts(ax)) == ["not paid"] * 2 + ["paid"] * 2
    assert len(ax.patches) == 4
