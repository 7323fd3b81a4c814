"""The figures of chapter 11: one commit on the disk, and what every crash
point of a run leaves.

BOOK-ONLY, like the other ``powerloss`` modules (it reads their events and
evidence; matplotlib is imported inside each function, as in the rest of ``figures``).
Colours keep their meaning from ``figures.COLOURS``: green kept, red lost,
amber not yet durable, blue a sync.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crashcourse.figures import COLOURS, TEXT, _entry, closed_figure, count_ticks

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["OUTCOME_COLOURS", "FOLDER", "point_outcome", "crash_outcomes",
    "disk_timeline"]

KEPT, LOST, CORRUPT = "kept", "lost", "corrupt"
OUTCOME_COLOURS = {KEPT: COLOURS["ok"], LOST: COLOURS["bad"], CORRUPT: "#212121"}
FOLDER = "folder"  # the lane of directory syncs


def point_outcome(point: Mapping) -> str:
    """The worst thing any image of one crash point shows: ``corrupt``, an
    acknowledged payment ``lost``, or everything ``kept`` (chapter 11).
    ``point`` is one entry of a case's ``points`` (``powerloss.evidence_points``)."""
    verdicts = [seen["verdict"] for seen in point["verdicts"]]
    if any(v["corrupt"] for v in verdicts):
        return CORRUPT
    acked = set(point["acknowledged"])
    return LOST if any(acked - set(v["paid"]) for v in verdicts) else KEPT


def _closed_figure(rows: int, width: float, height: float):
    fig, axes = closed_figure(rows, 1, figsize=(width, height), squeeze=False)
    return fig, [row[0] for row in axes]


def crash_outcomes(rows: Mapping[str, Sequence[str]],
                   acks: Mapping[str, Sequence[int]], title: str = ""):
    """One strip per run (``rows[label]``: the outcome at crash points 0, 1,
    ...), one cell per crash point, coloured by ``point_outcome``; a black
    mark above each point that follows an acknowledgement (``acks[label]``)
    (chapter 11)."""
    from matplotlib.patches import Rectangle

    labels = list(rows)
    widest = max(len(outcomes) for outcomes in rows.values())
    fig, [ax] = _closed_figure(1, 8.5, 0.45 * len(labels) + 1.9)
    for y, label in enumerate(labels):
        for x, outcome in enumerate(rows[label]):
            ax.add_patch(Rectangle((x, y + 0.1), 1, 0.6, edgecolor="white",
                                   linewidth=0.3,
                                   facecolor=OUTCOME_COLOURS[outcome]))
        marks = acks.get(label, ())
        ax.plot([x + 0.5 for x in marks], [y + 0.02] * len(marks), "kv",
                markersize=4, linestyle="")
    ax.set(xlim=(0, widest + 0.5), ylim=(len(labels), -0.2), title=title,
           xlabel="crash point (events of the run before the power goes)")
    ax.set_yticks([y + 0.4 for y in range(len(labels))], labels, fontsize=TEXT)
    ax.tick_params(axis="y", length=0)
    count_ticks(ax.xaxis)
    entries = [_entry(f"acknowledged payment {LOST}", OUTCOME_COLOURS[LOST]),
               _entry(CORRUPT, OUTCOME_COLOURS[CORRUPT]),
               _entry(f"every acknowledged payment {KEPT}", OUTCOME_COLOURS[KEPT]),
               _entry("just after a payment returned", "black", "v")]
    return _legend_below(fig, entries, ncol=2)


def _legend_below(fig, entries, ncol: int):
    """The legend in a band of its own under the axes."""
    legend = fig.legend(handles=entries, fontsize=TEXT, ncol=ncol, loc="lower center")
    fig.draw_without_rendering()
    band = legend.get_window_extent().height / fig.bbox.height
    fig.tight_layout(rect=(0, band + 0.01, 1, 1))
    return fig


def _durable_by_ack(events: Sequence) -> list[bool | None]:
    """Per event: a write made durable (a sync of its file) before the first
    acknowledgement of ``events``; None for a write after it, or no write."""
    ack = next((i for i, e in enumerate(events) if e.kind == "mark"), len(events))
    return [None if e.kind != "write" or i > ack else any(
        later.kind == "sync" and later.name == e.name for later in events[i:ack])
        for i, e in enumerate(events)]


def disk_timeline(panels: Mapping[str, Sequence], title: str = ""):
    """What one commit asked of the disk, one panel per run: a lane per file
    (and the folder), each event at its place in order: writes (green once a
    sync of their file made them durable before the payment returned, amber
    if not), syncs, a file made or removed; the dashed line is the moment
    ``issue_payment`` returned (chapter 11). ``panels[label]`` is a slice of a
    recorder's events."""
    fig, axes = _closed_figure(len(panels), 8.5, 1.6 * len(panels) + 1.4)
    looks = {"sync": ("|", COLOURS["info"], 14), "dirsync": ("|", COLOURS["info"], 14),
             "create": ("P", "black", 7), "delete": ("X", COLOURS["bad"], 7),
             "truncate": ("<", "black", 7)}
    for ax, (label, events) in zip(axes, panels.items(), strict=True):
        lanes = list(dict.fromkeys(FOLDER if e.kind == "dirsync" else e.name
                                   for e in events if e.kind != "mark"))
        for x, (event, durable) in enumerate(zip(events, _durable_by_ack(events),
                                                 strict=True), start=1):
            if event.kind == "mark":
                ax.axvline(x, color="black", linestyle="--", linewidth=1)
                continue
            y = lanes.index(FOLDER if event.kind == "dirsync" else event.name)
            colour = {True: COLOURS["ok"], False: COLOURS["doubt"]}.get(
                durable, COLOURS["idle"])
            marker, colour, size = looks.get(event.kind, ("s", colour, 7))
            ax.plot([x], [y], marker=marker, color=colour, markersize=size,
                    markeredgewidth=2.5 if marker == "|" else 1, linestyle="")
        ax.set_yticks(range(len(lanes)), lanes, fontsize=TEXT)
        ax.set(ylim=(len(lanes) - 0.4, -0.6), xlim=(0, len(events) + 1), title=label)
        count_ticks(ax.xaxis)
    axes[-1].set_xlabel("event, in the order SQLite asked for it")
    entries = [_entry("write, durable when the payment returned", "ok"),
               _entry("write, not yet durable", "doubt"),
               _entry("write after it returned", "idle"),
               _entry("sync (fsync of a file or the folder)", "info", "|"),
               _entry("file made", "black", "P"), _entry("file removed", "bad", "X"),
               _entry("the payment returned", "black", "", "--")]
    fig.suptitle(title, fontsize=TEXT)
    return _legend_below(fig, entries, ncol=2)
