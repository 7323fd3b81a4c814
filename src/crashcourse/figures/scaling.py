"""Figures of cost against size, drawn from bench results (introduced in
chapter 05).

A bench (``make bench``) commits its medians as JSON under ``bench/results/``;
a chapter reads that file and hands the points to this module, so the figure
shows what was measured and nothing is timed while the book runs. Like
``crashcourse.figures``, matplotlib is imported inside the function and the
function returns a closed ``Figure`` of a fixed size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crashcourse.figures import COLOURS, TEXT, new_figure

# The order in which series take colours when the caller names none:
# the first series is the one the chapter is about (the current runtime).
_CYCLE = ("ok", "bad", "info", "doubt", "idle")
_MARKERS = ("o", "s", "^", "D", "v")


def cost_against_size(
    series: Mapping[str, Sequence[tuple[int, float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    reference: tuple[float, str] | None = None,
    colours: Mapping[str, str] | None = None,
):
    """One line per series of ``(size, cost)`` points, each end labelled with
    its cost; ``reference`` is ``(value, label)``, a dashed horizontal line (a
    target, say). The x axis is logarithmic when every size is positive, and
    linear when a series starts at an empty queue (size 0). The y axis starts
    at 0, so a flat line reads as flat. ``colours`` maps a series to a
    ``COLOURS`` name or a colour; otherwise series take them in order.
    Returns a closed Figure, always 7 x 3.2 inches (chapter 05)."""
    fig, ax = new_figure(7.0, 3.2)
    sizes = [x for points in series.values() for x, _ in points]
    if sizes and min(sizes) > 0:
        ax.set_xscale("log")
    chosen = dict(colours or {})
    top = 0.0
    for i, (name, points) in enumerate(series.items()):
        if not points:
            continue
        colour = chosen.get(name, _CYCLE[i % len(_CYCLE)])
        colour = COLOURS.get(colour, colour)
        xs = [x for x, _ in points]
        ys = [y for _, y in points]
        top = max(top, *ys)
        ax.plot(xs, ys, marker=_MARKERS[i % len(_MARKERS)], markersize=4,
                color=colour, label=name)
        ax.annotate(_short(ys[-1]), (xs[-1], ys[-1]), textcoords="offset points",
                    xytext=(4, 2), fontsize=TEXT, color=colour)
    if reference is not None:
        value, label = reference
        top = max(top, value)
        ax.axhline(value, color=COLOURS["idle"], linestyle="--", linewidth=1,
                   label=label)
    ax.set_ylim(0, top * 1.15 if top > 0 else 1)
    ax.margins(x=0.08)  # room for the last point's label
    ax.set_title(title, fontsize=TEXT)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=TEXT, loc="upper left")
    fig.tight_layout()
    return fig


def _short(value: float) -> str:
    """A point's label: whole numbers above 100, one decimal below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"
