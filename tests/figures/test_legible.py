"""Every figure the book draws can be read where the website shows it.

The site shows a figure's PNG (cropped to what is drawn, as Jupyter's inline
backend does) at its own size, or scaled down to ``figures.SHOWN_PX`` when it
is wider; the browser test (tests/book/test_site.py) checks that width. Here
each figure function draws the largest shape a chapter gives it (chapter 07's
43-step journal, chapter 09's seven rows of it), and every word in it (titles,
ticks, legends, numbers in bars and cells) must be at least
``figures.LEGIBLE_PX`` tall as shown: its font size in pixels at the figure's
dpi, times the scale the page applies. A new figure function without a case
here fails the last test.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("matplotlib")

from matplotlib.text import Text  # noqa: E402

from crashcourse import figures  # noqa: E402
from crashcourse.figures import (  # noqa: E402
    evidence,
    partition,
    powerloss,
    scaling,
    workflow,
)

PAD_INCHES = 0.1  # matplotlib's pad around a bbox_inches="tight" PNG
MODULES = (figures, evidence, partition, powerloss, scaling, workflow)
NOT_FIGURES = {"new_figure", "closed_figure", "count_ticks", "point_outcome",
               "partition_lanes", "trial_timeline", "evidence_trials", "shown_part",
               "trial_name",
               "read_evidence", "write", "main", "label_rows"}
# a quick run of chapter 06's checkpoint (8 trials), as make checkpoints writes it
CH06_EVIDENCE = Path(__file__).parent / "data" / "ch06_worker_recovery_quick.json"

STEPS = [str(n) for n in range(1, 44)]
JOURNAL = {("journal", n): "ok" if int(n) < 32 else "doubt" if n == "32" else "idle"
           for n in STEPS}
NIGHT = ["resume: at the kill", "resume: decided", "unwind: at the kill",
         "unwind: decided", "daylight: at the kill", "daylight: after the night",
         "daylight: the morning"]
EVENTS = [SimpleNamespace(kind=kind, name=name) for kind, name in [
    ("write", "shop.db-journal"), ("sync", "shop.db-journal"), ("write", "shop.db"),
    ("sync", "shop.db"), ("delete", "shop.db-journal"), ("dirsync", "."),
    ("mark", ""), ("write", "shop.db")]]
ROWS = {"store": {"claims": [{"claimed_at": 0.0, "expires": 2.0},
                             {"claimed_at": 2.1}],
                  "work": [{"finished": 3.0}],
                  "refusals": [{"generation": 1, "at": 3.5}]},
        "supplier": {"requests": [{"method": "POST", "at": 0.5, "answer": "200",
                                   "generation": 1},
                                  {"method": "POST", "at": 2.5, "answer": "200",
                                   "generation": 2}]}}
MOVES = [("pending", "running"), ("running", "waiting_for_approval"),
         ("waiting_for_approval", "running"), ("running", "completed"),
         ("running", "cancelled"), ("running", "running")]

CASES = {
    "grouped_bars": lambda: figures.grouped_bars(
        {"charged": {f"case {i}": i for i in range(6)},
         "left": {f"case {i}": 1 for i in range(6)}}, "payments per case", "payments",
        limit=(1, "one payment")),
    "kill_and_end": lambda: figures.kill_and_end(
        {"none": None, "before": 0, "after": 1, "draft": 1},
        {"none": 1, "before": 1, "after": 1, "draft": 2}, (1, "one note"),
        "notes at the kill and at the end", "notes",
        twin=("units", 24, {"before": 0, "after": 24}, {"none": 24, "draft": 48})),
    "timeline": lambda: figures.timeline(
        [("first", 0, 54, "bad"), ("replacement", 54, 112, "ok")],
        [("first", 53, "held at after_payment"), ("first", 54, "SIGKILL"),
         ("replacement", 112, "exit 0")], title="a kill and a replacement"),
    "state_grid": lambda: figures.state_grid(
        ["journal"], STEPS, JOURNAL,
        title="after the kill: green confirmed, amber in doubt, grey not started"),
    "state_grid of seven rows": lambda: figures.state_grid(
        NIGHT, STEPS, {(row, n): "ok" for row in NIGHT for n in STEPS},
        title="done, in doubt, not started; restored, left as found"),
    "state_grid with words": lambda: figures.state_grid(
        ["race 1", "race 2"], ["racer-a", "racer-b"],
        {("race 1", "racer-a"): "ok", ("race 2", "racer-b"): "ok"}, "who paid",
        labels={("race 1", "racer-a"): "paid", ("race 2", "racer-b"): "paid"},
        cell_width=1.2),
    "kill_map": lambda: figures.kill_map(
        {f"campaign {g}": {f"trial {t}": t != 2 for t in range(1, 9)}
         for g in range(3)},
        [(f"campaign {g}", f"trial {t}", 4 * t, "a step in doubt") for g in range(3)
         for t in range(1, 9)],
        {"no row yet": "idle", "a step in doubt": "doubt", "between steps": "info",
         "every step confirmed": "ok"}, title="every SIGKILL", span=(0, 43),
        xlabel="the journal's last row at the kill"),
    "draw": lambda: evidence.draw(evidence.read_evidence(CH06_EVIDENCE),
                                  title="crashcourse/ch06_worker_recovery/1"),
    "claims_per_host": lambda: partition.claims_per_host(
        {f"{host}-{n}": 10 + n for host in "ab" for n in range(4)}),
    "partition_timeline": lambda: partition.partition_timeline(ROWS, 1.0, 2.6),
    "crash_outcomes": lambda: powerloss.crash_outcomes(
        {"FULL": ["kept"] * 40, "NORMAL": ["kept"] * 30 + ["lost"] * 10,
         "OFF": ["corrupt"] * 40}, {"FULL": [5, 20], "NORMAL": [5, 20]},
        title="what each crash point leaves"),
    "disk_timeline": lambda: powerloss.disk_timeline(
        {"FULL": EVENTS, "NORMAL": EVENTS}, title="one commit on the disk"),
    "cost_against_size": lambda: scaling.cost_against_size(
        {"journal": [(10, 1.5), (100, 2.0), (1000, 4.0), (10000, 30.0)],
         "DBOS": [(10, 900.0), (10000, 1100.0)]}, title="resume against plan length",
        xlabel="steps", ylabel="ms", reference=(1000, "one second")),
    "state_diagram": lambda: workflow.state_diagram(
        MOVES, taken={move: 1 for move in MOVES[:3]}, title="the workflow's moves"),
    "effects_over_time": lambda: workflow.effects_over_time(
        {"renames": [0, 10, 20, 30], "mails": [5, 15]}, [("stop", 12), ("kill", 25)],
        title="effects after a stop"),
    "version_timeline": lambda: workflow.version_timeline(
        {"a kill and a replacement": (
            [("worker-1", 1, "v1", "ok"), ("worker-2", 2, "v2", "ok"),
             ("person", 3, "v3", "info")], [("worker-1", 1.5, "SIGKILL")]),
         "a refusal": ([("worker-1", 1, "v1", "ok")], [("worker-2", 1.5, "refused")])},
        ["worker-1", "worker-2", "person"], title="who made each version"),
}


def shown_scale(fig) -> float:
    """How much the page scales the figure's PNG: 1, or less when it is wider
    than the content box."""
    fig.draw_without_rendering()
    drawn = fig.get_tightbbox()
    png_px = (drawn.width + 2 * PAD_INCHES) * fig.dpi
    return min(1.0, figures.SHOWN_PX / png_px)


def words(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


@pytest.mark.parametrize("case", list(CASES))
def test_every_word_is_legible_as_the_page_shows_it(case):
    fig = CASES[case]()
    scale = shown_scale(fig)
    small = sorted({(round(t.get_fontsize() * fig.dpi / 72 * scale, 1), t.get_text())
                    for t in words(fig)})
    assert small, "a figure without words"
    too_small = [(px, text) for px, text in small if px < figures.LEGIBLE_PX]
    assert not too_small, (
        f"shown at {scale:.2f} of its size, these words are under "
        f"{figures.LEGIBLE_PX} px: {too_small[:8]}")


def test_a_figure_too_wide_for_the_page_is_caught():
    """The negative control: the strip chapter 07 used to draw (43 columns of
    0.35 in, 1,356 px shown at 688) fails the check."""
    fig, ax = figures.new_figure(0.35 * 43 + 2, 1.55)
    ax.set_xticks(range(43), STEPS, fontsize=figures.TEXT)
    scale = shown_scale(fig)
    assert scale < 0.7
    assert min(t.get_fontsize() * fig.dpi / 72 * scale
               for t in words(fig)) < figures.LEGIBLE_PX


def test_every_figure_function_has_a_case():
    drawn = {case.split(" ")[0] for case in CASES}
    public = {name for module in MODULES for name, value in vars(module).items()
              if inspect.isfunction(value) and value.__module__ == module.__name__
              and not name.startswith("_")}
    assert public - NOT_FIGURES - drawn == set()
