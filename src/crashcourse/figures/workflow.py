"""Figures of states and moves over time (chapters 08-09).

The workflow's state diagram, drawn from ``workflow.MOVES``; a timeline of who
made which version; effects over time against the instants a stop was given.
Each returns a closed Figure of fixed size, like ``crashcourse.figures``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crashcourse.figures import COLOURS, FIT_INCHES, TEXT, closed_figure, new_figure


def state_diagram(
    moves: Sequence[tuple[str, str]],
    states: Sequence[str] | None = None,
    taken: Mapping[tuple[str, str], int] | None = None,
    title: str = "",
):
    """States and their legal moves, drawn from ``moves`` (chapter 08).

    The columns come from the table itself: states no move enters, then the
    states a run lives in, then the final states (no move leaves them);
    ``states`` orders them (default: as they appear in ``moves``). A move to
    the same state is a loop. With ``taken`` ({(from, to): times}, counted
    from history rows) every move shows its count, and moves never taken are
    grey."""
    from matplotlib.patches import FancyArrowPatch

    states = list(states or dict.fromkeys(s for move in moves for s in move))
    entered = {to for source, to in moves if source != to}
    left = {source for source, to in moves if source != to}
    columns = [[s for s in states if s not in entered],
               [s for s in states if s in entered and s in left],
               [s for s in states if s not in left]]
    fig, ax = new_figure(7.5, 4.0)
    nodes = {}
    for x, column in enumerate(columns):
        for i, state in enumerate(column):
            final = x == 2
            nodes[state] = ax.text(
                x * 1.8, (len(column) - 1) / 2 * 1.2 - i * 1.2,
                state.replace("_", " "), ha="center", va="center", fontsize=TEXT,
                bbox={"boxstyle": "round,pad=0.5", "ec": "black",
                      "fc": COLOURS["ok" if final else "info"],
                      "alpha": 0.3 + 0.4 * final})
    for source, to in moves:
        count = None if taken is None else taken.get((source, to), 0)
        colour = COLOURS["idle"] if count == 0 else "black"
        (x0, y0), (x1, y1) = nodes[source].get_position(), nodes[to].get_position()
        if source == to:  # a loop over the top of the box
            ends = {"posA": (x0 - 0.15, y0 + 0.14), "posB": (x0 + 0.15, y0 + 0.14),
                    "connectionstyle": "arc3,rad=-2.0"}
            label_at = (x0, y0 + 0.55)
        else:
            # a pair of opposite moves, or a move over the middle column, curves
            bend = 0.3 if (to, source) in moves else 0.2 * (x1 - x0 > 2)
            ends = {"posA": (x0, y0), "posB": (x1, y1),
                    "patchA": nodes[source].get_bbox_patch(),
                    "patchB": nodes[to].get_bbox_patch(),
                    "connectionstyle": f"arc3,rad={bend}"}
            label_at = ((x0 + x1) / 2 + bend * (y1 - y0) / 2,
                        (y0 + y1) / 2 - bend * (x1 - x0) / 2)
        ax.add_patch(FancyArrowPatch(**ends, arrowstyle="-|>", mutation_scale=12,
                                     color=colour, zorder=4))  # over the boxes
        if count is not None:
            ax.text(*label_at, str(count), fontsize=TEXT, ha="center", va="center",
                    color=colour, zorder=5,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "lw": 0})
    ax.set_xlim(-0.8, 2 * 1.8 + 0.9)
    ax.set_ylim(-1.6, 1.7)
    ax.axis("off")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def effects_over_time(
    series: Mapping[str, Sequence[float]],
    instants: Sequence[tuple[str, float]] = (),
    title: str = "",
    colours: Mapping[str, str] | None = None,
    xlabel: str = "ms since the first effect",
):
    """How many effects had happened by each instant, one step line per series
    (``series[label]``: the instants its rows carry), with a dashed vertical
    line at each labelled instant (``(label, at)``): what still happened after
    a stop, and what did not (chapter 09)."""
    fig, ax = new_figure(FIT_INCHES, 3.4)
    top = max((len(times) for times in series.values()), default=0)
    seen = [at for _, at in instants] + [t for ts in series.values() for t in ts]
    first, last = min(seen, default=0.0), max(seen, default=0.0)
    end = last + 0.08 * (last - first)  # every line runs on, flat, past the last
    for label, times in series.items():
        times = sorted(times)
        colour = (colours or {}).get(label)
        ax.step([*times, end], [*range(1, len(times) + 1), len(times)],
                where="post", label=f"{label} ({len(times)})", linewidth=1.8,
                color=COLOURS.get(colour, colour))
    for label, at in instants:
        ax.axvline(at, color="black", linestyle="--", linewidth=1)
        ax.annotate(label, (at, top * 0.9), xytext=(3, 0), textcoords="offset points",
                    rotation=90, ha="left", va="top", fontsize=TEXT)
    ax.set_xlim(first - 0.02 * (end - first), end)
    ax.set_ylim(0, top * 1.05 + 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("effects so far")
    ax.set_title(title)
    ax.legend(fontsize=TEXT, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside
    fig.tight_layout()
    return fig


def version_timeline(panels: Mapping[str, tuple[Sequence, Sequence]],
                     lanes: Sequence[str], title: str = ""):
    """Who made each version of a workflow, a lane per writer (chapter 08).

    ``panels[subtitle] = (made, marks)``: ``made`` holds one ``(lane, version,
    label, colour key)`` per history row, a box at that version; ``marks``
    holds ``(lane, x, label)`` for what no history row records (a SIGKILL, a
    read, a refusal). The x axis is the history rows' order, not a clock; the
    size depends on the panels and lanes, never on who won."""
    height = len(panels) * (0.55 * len(lanes) + 0.7) + 0.5
    fig, axes = closed_figure(len(panels), 1, sharex=True, squeeze=False,
                              figsize=(FIT_INCHES, height))
    for ax, (subtitle, (made, marks)) in zip(axes[:, 0], panels.items(), strict=True):
        for lane, version, label, colour in made:
            ax.barh(lanes.index(lane), 0.9, left=version - 0.45, height=0.7,
                    color=COLOURS.get(colour, colour))
            ax.text(version, lanes.index(lane), label, ha="center", va="center",
                    fontsize=TEXT, color="white")
        for lane, at, label in marks:
            ax.plot([at], [lanes.index(lane)], marker="v", color="black")
            # two marks in one lane: the first's label ends at its mark, the
            # next one's starts at its own, so they never cover each other
            mine = sorted(x for other, x, _ in marks if other == lane)
            side = "center" if len(mine) == 1 else (
                "right" if mine.index(at) % 2 == 0 else "left")
            ax.annotate(label, (at, lanes.index(lane) - 0.42), fontsize=TEXT,
                        ha=side)
        ax.set_yticks(range(len(lanes)), lanes, fontsize=TEXT)
        ax.set_ylim(len(lanes) - 0.5, -0.8)  # the first lane on top
        ax.set_title(subtitle, fontsize=TEXT)
    last = max((v for made, _ in panels.values() for _, v, _, _ in made), default=1)
    ax.set_xticks(range(1, last + 1))
    ax.set_xlim(0.3, last + 0.9)
    ax.set_xlabel("workflow version (the history rows, in order)")
    fig.suptitle(title, fontsize=TEXT)
    fig.tight_layout()
    return fig
