"""Figures the chapters share (introduced in chapter 00).

Matplotlib is a book dependency, not a runtime one, so it is imported inside
each function. Every function returns a closed ``Figure``: a chapter cell ends
with the bare figure, which Jupyter shows once as an inline PNG. (Closing it
keeps pyplot from drawing it a second time at the end of the cell.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# One colour per meaning, the same in every chapter.
COLOURS = {
    "ok": "#2e7d32",
    "bad": "#c62828",
    "doubt": "#f9a825",
    "idle": "#9e9e9e",
    "info": "#1565c0",
}


def new_figure(width: float = 7.0, height: float = 3.0):
    """A figure and its axes, already closed so pyplot will not show it twice."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height), dpi=80)
    plt.close(fig)
    return fig, ax


def grouped_bars(
    counts: Mapping[str, Mapping[str, float]],
    title: str,
    ylabel: str,
    colours: Mapping[str, str] | None = None,
):
    """Bars per category (x) and series (one colour each): ``counts[series][x]``."""
    fig, ax = new_figure(max(6.0, 0.9 * len(next(iter(counts.values()), {})) + 2))
    series = list(counts)
    categories = list(dict.fromkeys(x for s in series for x in counts[s]))
    width = 0.8 / max(1, len(series))
    for i, name in enumerate(series):
        xs = [j + i * width for j in range(len(categories))]
        ys = [counts[name].get(x, 0) for x in categories]
        colour = (colours or {}).get(name)
        ax.bar(xs, ys, width=width, label=name, color=colour)
    ax.set_xticks([j + width * (len(series) - 1) / 2 for j in range(len(categories))])
    ax.set_xticklabels(categories, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def timeline(
    lanes: Sequence[tuple[str, float, float, str]],
    events: Sequence[tuple[str, float, str]] = (),
    title: str = "",
    xlabel: str = "ms since start",
):
    """Horizontal spans per lane, ``(lane, start, end, colour key)``, plus
    labelled instants ``(lane, at, label)``: process lifetimes, leases, kills."""
    names = list(dict.fromkeys(lane for lane, *_ in lanes))
    fig, ax = new_figure(7.5, 0.6 * len(names) + 1.4)
    for lane, start, end, colour in lanes:
        y = names.index(lane)
        ax.barh(y, end - start, left=start, height=0.5,
                color=COLOURS.get(colour, colour))
    for lane, at, label in events:
        y = names.index(lane)
        ax.plot([at], [y], marker="v", color="black")
        ax.annotate(label, (at, y + 0.3), fontsize=7, ha="center")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.set_ylim(-0.6, len(names) - 0.2)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def state_grid(
    rows: Sequence[str],
    columns: Sequence[str],
    cells: Mapping[tuple[str, str], str],
    title: str = "",
):
    """A table of coloured cells, ``cells[(row, column)] = colour key``: decision
    tables, journal state per step. Missing cells stay blank."""
    import matplotlib.colors as mcolors

    fig, ax = new_figure(max(4.0, 0.35 * len(columns) + 2), 0.35 * len(rows) + 1.2)
    for (row, column), key in cells.items():
        colour = mcolors.to_rgba(COLOURS.get(key, key))
        ax.add_patch(_cell(columns.index(column), rows.index(row), colour))
    ax.set_xlim(0, len(columns))
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([i + 0.5 for i in range(len(columns))])
    ax.set_xticklabels(columns, rotation=90, fontsize=7)
    ax.set_yticks([i + 0.5 for i in range(len(rows))])
    ax.set_yticklabels(rows, fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def _cell(x: int, y: int, colour):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), 1, 1, facecolor=colour, edgecolor="white")
