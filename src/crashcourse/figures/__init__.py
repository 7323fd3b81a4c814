"""Figures the chapters share (introduced in chapter 00).

Matplotlib is a book dependency, not a runtime one, so it is imported inside
each function. Every function returns a closed ``Figure`` whose size depends
only on the shape of its input: a chapter cell ends with the bare figure,
which Jupyter shows once as an inline PNG. (Closing it keeps pyplot from
drawing it a second time at the end of the cell.)
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["DPI", "SHOWN_PX", "LEGIBLE_PX", "TEXT", "FIT_INCHES", "COLOURS",
    "new_figure", "count_ticks", "grouped_bars", "kill_and_end", "timeline",
    "state_grid", "kill_map", "partition", "powerloss", "scaling", "workflow"]

# What a reader sees: the website shows a figure at most SHOWN_PX wide (the
# article's content box at a 1280 px window; a wider PNG is scaled down), and
# every word in a figure is at least LEGIBLE_PX tall there: the book's
# smallest body text, 14 px code and outputs beside 16 px paragraphs
# (tests/figures/test_legible.py; the site's browser test reads that size
# from the rendered page and checks each figure as shown). At DPI, TEXT
# points are 14.4 px: a figure at most FIT_INCHES wide shows them at that size.
DPI = 80
SHOWN_PX = 688
LEGIBLE_PX = 14
TEXT = 13  # points: every label, tick, legend, number and title
FIT_INCHES = SHOWN_PX / DPI
# Matplotlib's defaults (10-point ticks and labels, 12-point titles) would be
# under LEGIBLE_PX: every figure of the book draws its words at TEXT. Ticks are
# made when a figure is drawn, after the function returns, so the setting is
# matplotlib's own (rcParams), not a context around the function.
WORDS = {key: TEXT for key in ("font.size", "axes.titlesize", "axes.labelsize",
                               "xtick.labelsize", "ytick.labelsize",
                               "legend.fontsize", "legend.title_fontsize",
                               "figure.titlesize")}

# One colour per meaning, the same in every chapter.
COLOURS = {
    "ok": "#2e7d32",
    "bad": "#c62828",
    "doubt": "#f9a825",
    "idle": "#9e9e9e",
    "info": "#1565c0",
}


def new_figure(width: float = 7.0, height: float = 3.0):
    """A figure and its axes, already closed so pyplot will not show it twice;
    its words, and every figure's after it, at TEXT points."""
    return closed_figure(1, 1, figsize=(width, height))


def closed_figure(rows: int, columns: int, **options):
    """``plt.subplots(rows, columns, **options)`` at DPI, its words at TEXT
    points, closed so pyplot will not show it a second time."""
    import matplotlib.pyplot as plt

    plt.rcParams.update(WORDS)
    fig, axes = plt.subplots(rows, columns, dpi=DPI, **options)
    plt.close(fig)
    return fig, axes


def count_ticks(axis) -> None:
    """Whole-number ticks on ``axis`` (``ax.yaxis``): nobody counts half a
    payment."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def grouped_bars(
    counts: Mapping[str, Mapping[str, float]],
    title: str,
    ylabel: str,
    colours: Mapping[str, str] | None = None,
    limit: tuple[float, str] | None = None,
):
    """Bars per category (x) and series (one colour each): ``counts[series][x]``.
    Whole numbers are counts: whole-number ticks, and each bar's number.
    ``limit = (value, label)`` draws a dashed line there, and a bar above it
    is red, whatever its series (chapter 02)."""
    width = max(6.0, 0.9 * len(next(iter(counts.values()), {})) + 2)
    if limit is not None:  # room for the legend beside the axes
        width = min(FIT_INCHES, width + 2.6)
    fig, ax = new_figure(width)
    series = list(counts)
    whole = all(float(v).is_integer() for s in series for v in counts[s].values())
    categories = list(dict.fromkeys(x for s in series for x in counts[s]))
    width = 0.8 / max(1, len(series))
    colours = {name: COLOURS.get(c, c) for name, c in (colours or {}).items()}
    for i, name in enumerate(series):
        xs = [j + i * width for j in range(len(categories))]
        ys = [counts[name].get(x, 0) for x in categories]
        bars = ax.bar(xs, ys, width=width, label=name, color=colours.get(name))
        if limit is not None:
            for bar, y in zip(bars, ys, strict=True):
                if y > limit[0]:
                    bar.set_color(COLOURS["bad"])
        if whole:  # a count of 0 is a number, not a missing bar
            ax.bar_label(bars, fontsize=TEXT, padding=2)
    ax.set_xticks([j + width * (len(series) - 1) / 2 for j in range(len(categories))],
                  categories, rotation=20, ha="right", fontsize=TEXT)
    if whole:
        count_ticks(ax.yaxis)
        ax.margins(y=0.12)
    ax.set(ylabel=ylabel, title=title)
    if limit is None:
        ax.legend(fontsize=TEXT)
    else:  # beside the axes: the bars above the line would be under it
        handles, _ = ax.get_legend_handles_labels()
        ax.axhline(limit[0], color="black", linestyle="--", linewidth=1)
        handles += [_entry(limit[1], "black", "", "--"),
                    _entry(f"above {limit[1]}", "bad")]
        ax.legend(handles=handles, fontsize=TEXT, loc="upper left",
                  bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


def kill_and_end(
    at_kill: Mapping[str, float | None],
    at_end: Mapping[str, float],
    expected: tuple[float, str],
    title: str,
    ylabel: str,
    twin: tuple[str, float, Mapping, Mapping] | None = None,
):
    """A count per case at the kill (grey; ``None``: no kill) and at the end
    (blue, red above the ``expected = (value, label)`` dashed line), each bar
    with its number (chapter 01). ``twin = (label, per, at_kill, at_end)`` adds
    a second count as diamonds on a right axis, ``per`` of it to one unit of
    the first: where the two counts agree, each diamond sits on its bar."""
    (line, line_label), cases = expected, list(at_end)
    fig, ax = new_figure(8.5, 4.2)
    # the bars in the lower half: the legend's two rows above them
    top = 2.0 * max([line, *at_end.values(), *(v or 0 for v in at_kill.values())])
    for j, case in enumerate(cases):
        end_colour = "bad" if at_end[case] > line else "info"
        for x, value, colour in ((j - 0.2, at_kill.get(case), "idle"),
                                 (j + 0.2, at_end[case], end_colour)):
            if value is None:
                ax.text(x, 0.05, "no kill", ha="center", va="bottom",
                        rotation=90, fontsize=TEXT, color="dimgray")
                continue
            ax.bar(x, value, width=0.38, color=COLOURS[colour])
            ax.annotate(f"{value:g}", (x, value), xytext=(0, 7),
                        textcoords="offset points", ha="center", fontsize=TEXT)
    ax.axhline(line, color="black", linestyle="--", linewidth=1)
    ax.set_ylim(0, top)
    count_ticks(ax.yaxis)
    ax.set_xticks(range(len(cases)), cases, rotation=20, ha="right", fontsize=TEXT)
    ax.set(ylabel=ylabel, title=title)
    entries = [_entry("at the kill", "idle"), _entry("at the end", "info"),
               _entry("at the end, above the line", "bad"),
               _entry(line_label, "black", "", "--")]
    if twin is not None:
        label, per, twin_kill, twin_end = twin
        right = ax.twinx()
        for dx, values in ((-0.2, twin_kill), (0.2, twin_end)):
            shown = [j for j, c in enumerate(cases) if values.get(c) is not None]
            right.plot([j + dx for j in shown], [values[cases[j]] for j in shown],
                       "kD", markersize=4)
        right.set(ylim=(0, top * per), ylabel=label,
                  yticks=[per * n for n in range(int(top) + 1)])
        entries.append(_entry(f"{label} (right axis)", "black", "D"))
    ax.legend(handles=entries, fontsize=TEXT, ncol=3, loc="upper left")
    fig.tight_layout()
    return fig


def _entry(label: str, colour: str, marker: str = "s", linestyle: str = ""):
    """A legend entry: a square of colour, a marker, or a line."""
    from matplotlib.lines import Line2D

    return Line2D([], [], color=COLOURS.get(colour, colour), marker=marker,
                  linestyle=linestyle, markersize=8 if marker == "s" else 5,
                  label=label)


def timeline(
    lanes: Sequence[tuple[str, float, float, str]],
    events: Sequence[tuple[str, float, str]] = (),
    title: str = "",
    xlabel: str = "ms since start",
):
    """Horizontal spans per lane, ``(lane, start, end, colour key)``, plus
    labelled instants ``(lane, at, label)``: process lifetimes, leases, kills.
    A label that would cover another moves below its bar, or beside its mark."""
    names = list(dict.fromkeys(lane for lane, *_ in lanes))
    fig, ax = new_figure(FIT_INCHES, 0.75 * len(names) + 1.4)
    for lane, start, end, colour in lanes:
        y = names.index(lane)
        ax.barh(y, end - start, left=start, height=0.5,
                color=COLOURS.get(colour, colour))
    labels = []
    for lane, at, label in events:
        y = names.index(lane)
        ax.plot([at], [y], marker="v", color="black")
        labels.append(ax.annotate(label, (at, y + 0.25), xytext=(0, 3),
                                  textcoords="offset points", fontsize=TEXT,
                                  ha="center", va="bottom"))
    ax.set_yticks(range(len(names)), names, fontsize=TEXT)
    # headroom over the top lane for a label raised a line (_keep_apart)
    ax.set(ylim=(-0.7, len(names) + 0.1), xlabel=xlabel, title=title)
    fig.tight_layout()
    _keep_apart(fig, ax, labels)
    return fig


def _keep_apart(fig, ax, labels) -> None:
    """Place each label, in order, where it covers no label placed before it
    and stays inside the axes: above its bar, below it, a line higher than
    above, or to one side of its mark (above and centred when no place is
    free)."""
    fig.draw_without_rendering()
    inside, placed = ax.get_window_extent(), []
    # side 1 above the bar, -1 below it, 2 above and one line (1.2 TEXT) higher
    places = [(side, ha) for side in (1, -1, 2) for ha in ("center", "right", "left")]
    for text in labels:
        at, top = text.xy  # the top edge of the label's bar
        for side, ha in [*places, places[0]]:
            text.xy = (at, top if side > 0 else top - 0.5)
            text.xyann = (0, 3 + 1.2 * TEXT if side == 2 else 3 * side)
            text.set(va="bottom" if side > 0 else "top", ha=ha)
            box = text.get_window_extent()
            if (inside.x0 <= box.x0 and box.x1 <= inside.x1 and box.y1 <= inside.y1
                    and not any(box.overlaps(other) for other in placed)):
                break
        placed.append(text.get_window_extent())


def state_grid(
    rows: Sequence[str],
    columns: Sequence[str],
    cells: Mapping[tuple[str, str], str],
    title: str = "",
    labels: Mapping[tuple[str, str], str] | None = None,
    cell_width: float = 0.35,
):
    """A table of coloured cells, ``cells[(row, column)] = colour key``: decision
    tables, journal state per step. Missing cells stay blank; ``labels`` writes
    a word in a cell (give wide cells room with ``cell_width``, in inches).
    Words and column names wider than a cell wrap at their spaces; column
    names stand upright only where a word of one still does not fit. At most
    FIT_INCHES wide, so every word is legible on the website."""
    from matplotlib.patches import Rectangle

    # room for the row names (a character of TEXT: about 0.65 of its size)
    names = max(map(len, rows), default=0) * 0.65 * TEXT / 72
    width = min(FIT_INCHES, max(4.0, cell_width * len(columns) + max(2.0, names + 0.5)))
    row_inches = 2.5 * TEXT / 72  # two lines of a wrapped word, and a margin
    fig, ax = new_figure(width, row_inches * len(rows) + 1.2)
    for (row, column), key in cells.items():
        ax.add_patch(Rectangle((columns.index(column), rows.index(row)), 1, 1,
                               facecolor=COLOURS.get(key, key), edgecolor="white"))
    # a title wider than the figure wraps (a character: about 0.6 of TEXT)
    title = "\n".join(textwrap.wrap(title, int(width * 72 / (0.6 * TEXT)))) or title
    ax.set(xlim=(0, len(columns)), ylim=(len(rows), 0), title=title)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], rows, fontsize=TEXT)
    ax.set_xticks([i + 0.5 for i in range(len(columns))], columns, fontsize=TEXT)
    fig.tight_layout()
    # Words wider than a cell wrap at their spaces; a column name with a word
    # still too wide stands upright. Measured on the laid-out axes.
    fig.draw_without_rendering()
    cell_px = ax.get_window_extent().width / max(1, len(columns))
    # characters a cell holds, a few pixels apart (a character of TEXT is
    # about 0.65 of its size wide)
    fits = max(1, int((cell_px - 4) / (0.65 * TEXT * fig.dpi / 72)))

    def wrapped(word: str) -> str:
        return "\n".join(textwrap.wrap(word, fits, break_long_words=False)) or word

    for (row, column), word in (labels or {}).items():
        ax.text(columns.index(column) + 0.5, rows.index(row) + 0.5, wrapped(word),
                ha="center", va="center", fontsize=TEXT, color="white",
                linespacing=1.0)
    upright = any(len(part) > fits for name in columns for part in name.split())
    ax.set_xticks([i + 0.5 for i in range(len(columns))],
                  columns if upright else [wrapped(name) for name in columns],
                  rotation=90 if upright else 0, fontsize=TEXT)
    if upright:  # the upright names take their length below the cells
        longest = max(map(len, columns), default=0) * 0.65 * TEXT / 72
        fig.set_figheight(fig.get_figheight() + longest)
    fig.tight_layout()
    return fig


def kill_map(
    groups: Mapping[str, Mapping[str, bool]],
    kills: Sequence[tuple[str, str, float, str]],
    states: Mapping[str, str],
    title: str = "",
    xlabel: str = "",
    span: tuple[float, float] = (0, 1),
):
    """One line per trial, ``groups[group][trial] = held``, under its group's
    name; a mark per kill, ``(group, trial, x, state)``, coloured by the state
    it left (``states[state] = colour key``, also the legend); the verdict at
    the end of the line, and a failed trial on a red band (chapter 07)."""
    rows = [(g, t) for g in groups for t in [None, *groups[g]]]  # None: the name
    fig, ax = new_figure(8.5, 0.24 * len(rows) + 1.3)
    for y, (group, trial) in enumerate(rows):
        if trial is None:
            ax.text(span[0], y + 0.2, group, fontsize=TEXT, weight="bold")
            continue
        held = groups[group][trial]
        ax.plot(span, [y, y], color=COLOURS["idle"], linewidth=0.8)
        if not held:
            ax.axhspan(y - 0.5, y + 0.5, color=COLOURS["bad"], alpha=0.15)
        ax.annotate("held" if held else "FAILED", (1.01, y), va="center",
                    xycoords=("axes fraction", "data"), fontsize=TEXT,
                    color=COLOURS["ok" if held else "bad"], weight="bold")
    marker = {s: "XDos^"[i % 5] for i, s in enumerate(states)}
    seen: dict[tuple, int] = {}
    for group, trial, x, state in kills:
        y = rows.index((group, trial))
        nth = seen[(y, x)] = seen.get((y, x), -1) + 1  # a second kill, just below
        ax.plot([x], [y + 0.3 * nth], marker=marker[state], linestyle="",
                color=COLOURS.get(states[state], states[state]), markersize=6)
    ax.set_yticks(range(len(rows)), [t or "" for _, t in rows], fontsize=TEXT)
    ax.tick_params(axis="y", length=0)
    ax.set(ylim=(len(rows) - 0.4, -0.6), xlim=(span[0] - 1, span[1] + 1),
           xlabel=xlabel, title=title)
    count_ticks(ax.xaxis)
    ax.legend(handles=[_entry(s, c, marker[s]) for s, c in states.items()],
              fontsize=TEXT, ncol=len(states), loc="upper center",
              bbox_to_anchor=(0.5, -0.16))
    fig.tight_layout()
    return fig
