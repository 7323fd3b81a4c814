"""A checkpoint's evidence as a picture: one timeline per trial (issue 32).

    python -m crashcourse.figures.evidence EVIDENCE.json [--format png|svg|both]

writes EVIDENCE.png (and/or .svg) beside the JSON. Everything drawn is read
from the trial's rows, never from a literal of the checkpoint: each claim row
(``claimed_at``, ``expires``, ``generation``, ``owner``) is a lane, its lease
a span and its end a mark; a work row's ``finished`` marks the generation that
finished it; every row with an ``at`` instant (a service's requests with their
``method`` and ``answer``, refusals, ...) is a mark on the lane of the table
it came from, and so is a row's ``*_unix`` column (a payment's
``committed_unix``: ``committed``); the parent's own instants (``moments``:
each ``{"what", "at"}``, and any ``*_at_unix`` number, such as the kill) go
on a lane of their own. A trial whose evidence records no instant is named
and left out.

Book-only, like the rest of ``figures``: matplotlib is imported inside the
functions that draw, so the extraction (``trial_timeline``) runs without it.
Exit status: 0 written, 1 nothing to draw, 2 bad input (one line on stderr).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from crashcourse.validate import argument_parser

PARENT = "the parent"
MAX_TRIALS = 24  # more would make a page-long picture nobody reads
# Unix instants: a number outside this range is a duration or a count.
EPOCH = (1e9, 1e11)


def _instant(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if EPOCH[0] <= value <= EPOCH[1]:
            return float(value)
    return None


def _row_label(table: str, row: Mapping) -> str:
    """A request says its method, its answer and whose generation sent it;
    another row the table's name in the singular (and its action or kind)."""
    if "method" in row or "answer" in row:
        words = [str(row.get("method") or ""), str(row.get("answer") or "")]
        if row.get("generation") is not None:
            words.append(f"gen {row['generation']}")
        return " ".join(w for w in words if w)
    what = row.get("action") or row.get("kind") or row.get("what")
    name = table.removesuffix("s")
    return f"{name} {what}" if what else name


def trial_timeline(trial: Mapping) -> tuple[list, list]:
    """``(lanes, events)`` of one trial, in Unix seconds, from its rows:
    lanes ``(lane, start, end, colour key)`` and instants ``(lane, at, label)``
    (the shapes ``figures.timeline`` draws)."""
    lanes: list[tuple[str, float, float, str]] = []
    events: list[tuple[str, float, str]] = []
    by_generation: dict[object, str] = {}

    works: list[object] = []  # the first claim's work is the trial's own

    def claim(row: Mapping) -> None:
        start = _instant(row.get("claimed_at"))
        if start is None:
            return
        gen, work = row.get("generation"), row.get("work_id")
        if work not in works:
            works.append(work)
        lane = f"gen {gen}" + (f" ({row['owner']})" if row.get("owner") else "")
        if work != works[0]:
            lane = f"other work: {lane}"
        lane = by_generation.setdefault((work, gen), lane)
        end = _instant(row.get("expires"))
        lanes.append((lane, start, end if end is not None else start, "doubt"))
        events.append((lane, start, "claim"))
        if end is not None:
            events.append((lane, end, "lease ends"))

    def walk(node: object, table: str, owner: str = "") -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key == "manifest":
                    continue
                at, key = _instant(value), str(key)
                if at is not None and key.endswith("_at_unix"):
                    events.append((PARENT, at, key.removesuffix("_at_unix")))
                elif at is not None and key.endswith("_unix"):  # a row's own
                    events.append((table or PARENT, at, key.removesuffix("_unix")))
                walk(value, str(key), table)
        elif isinstance(node, list):
            rows = [r for r in node if isinstance(r, Mapping)]
            if table == "claims":
                for row in rows:
                    claim(row)
                return
            for row in rows:
                at = _instant(row.get("at"))
                if at is not None:
                    lane = (PARENT if table == "moments" else
                            f"{owner}: {table}" if owner not in ("", "rows")
                            else table)
                    label = (str(row.get("what", "")) if table == "moments"
                             else _row_label(table, row))
                    events.append((lane, at, label))
                else:
                    walk(row, table, owner)
            if table == "work":
                pending.extend(rows)

    pending: list[Mapping] = []
    walk(trial, "")
    for row in pending:  # after the claims: the lane of the generation
        finished = _instant(row.get("finished"))
        key = (row.get("id", row.get("work_id")), row.get("generation"))
        if finished is not None and key in by_generation:
            events.append((by_generation[key], finished, "finished"))
    return lanes, events


def evidence_trials(document: Mapping) -> list[tuple[str, list, list]]:
    """``(name, lanes, events)`` per trial of a checkpoint's evidence, its
    instants in seconds since the trial's first one; a trial with none is
    left out (``skipped`` names them)."""
    drawn = []
    for n, trial in enumerate(document.get("trials") or [], start=1):
        if not isinstance(trial, Mapping):
            continue
        lanes, events = trial_timeline(trial)
        instants = [a for _, a, _ in events] + [s for _, s, _, _ in lanes]
        if not instants:
            continue
        zero = min(instants)
        verdict = {True: "held", False: "FAILED"}.get(trial.get("holds"), "")
        name = " ".join(str(w) for w in (trial_name(trial, n), verdict) if w)
        lanes = [(lane, s - zero, e - zero, c) for lane, s, e, c in lanes]
        events = [(lane, a - zero, label) for lane, a, label in events]
        drawn.append((name, *shown_part(lanes, events)))
    return drawn


def shown_part(lanes: list, events: list) -> tuple[list, list]:
    """A lease that runs on long after the trial's last other instant is cut
    where the picture ends, and its end says how far it ran (``lease ends at
    5.6 s``); marks on one lane closer than a fiftieth of the picture share
    one label (``claim, finished``), so no two labels are drawn on top of
    each other."""
    others = [a for _, a, label in events if label != "lease ends"]
    others += [s for _, s, _, _ in lanes]
    last = max(others, default=0.0)
    cut = last + 0.2 * max(last, 1e-3)
    if any(e > cut for _, _, e, _ in lanes):
        lanes = [(lane, s, min(e, cut), c) for lane, s, e, c in lanes]
        events = [(lane, min(a, cut), f"{label} at {a:.1f} s" if a > cut else label)
                  for lane, a, label in events]
    else:
        cut = max([last, *(e for _, _, e, _ in lanes)])
    near = max(cut, 1e-3) / 50
    merged: list[list] = []
    for lane, at, label in sorted(events, key=lambda e: (e[0], e[1])):
        if merged and merged[-1][0] == lane and at - merged[-1][1] < near:
            if label not in merged[-1][2].split(", "):
                merged[-1][2] += f", {label}"
            continue
        merged.append([lane, at, label])
    return lanes, [tuple(e) for e in merged]


def trial_name(trial: Mapping, n: int) -> str:
    """What the checkpoint calls the trial (its case, intervention, ...), with
    its repetition, or its number when the evidence numbers its trials
    (``trial 3: live_stale_holder``); else its place in the evidence."""
    number = trial.get("trial")
    numbered = f"trial {number}" if type(number) is int else ""
    for key in ("case", "intervention", "name", "trial", "framework", "scenario"):
        value = trial.get(key)
        if isinstance(value, str):
            if isinstance(trial.get("variant"), str):
                value = f"{value}:{trial['variant']}"
            repetition = trial.get("repetition")
            again = f" #{repetition}" if type(repetition) is int else ""
            return f"{numbered}: {value}{again}" if numbered else f"{value}{again}"
    return numbered or f"trial {n}"


# Labels are laid out before drawing, from a generous estimate of their width
# (DejaVu Sans averages under 0.6 em a character), so rows never collide.
CHAR_EM = 0.62
GAP_PX = 6  # between two labels on one row
UNIT_PX = 36  # one data unit of a lane, in pixels of the PNG


def label_rows(events: list, axis_px: float, left: float, right: float,
               char_px: float) -> list[tuple]:
    """``(lane, at, label, row, dx)`` per mark: the row of labels above its
    lane it is written on (0 the lowest) and the offset in pixels of its left
    edge from its mark, so that no two labels of a lane overlap and none
    leaves the axes. A label goes on the lowest row with room for it."""
    ends: dict[str, list[float]] = {}
    placed = []
    for lane, at, label in sorted(events, key=lambda e: (e[0], e[1])):
        width = len(label) * char_px
        x = (at - left) / (right - left) * axis_px
        # centred on its mark, else starting or ending there; inside the axes
        starts = [min(max(s, 0.0), max(axis_px - width, 0.0))
                  for s in (x - width / 2, x, x - width)]
        rows = ends.setdefault(lane, [])
        row, start = next(((r, s) for r, end in enumerate(rows) for s in starts
                           if end + GAP_PX <= s), (len(rows), starts[0]))
        if row == len(rows):
            rows.append(0.0)
        rows[row] = start + width
        placed.append((lane, at, label, row, start - x))
    return placed


def draw(document: Mapping, title: str = ""):
    """One axes per trial (at most MAX_TRIALS), stacked; a closed Figure, or
    None when no trial records an instant. Each lane is as tall as its rows
    of labels need: no label covers another."""
    from crashcourse.figures import COLOURS, DPI, FIT_INCHES, TEXT, new_figure

    trials = evidence_trials(document)
    if not trials:
        return None
    shown = trials[:MAX_TRIALS]
    char_px, row_px = CHAR_EM * TEXT * DPI / 72, TEXT * DPI / 72 + 4
    layouts = []
    for _, lanes, events in shown:
        names = list(dict.fromkeys([lane for lane, *_ in lanes]
                                   + [lane for lane, *_ in events]))
        right = max([a for _, a, _ in events] + [e for _, _, e, _ in lanes])
        xlim = (-0.02 * right, 1.25 * right + 1e-3)  # room for a last label
        # the axes' width: the figure's, less the lane names and the margins
        axis_px = FIT_INCHES * DPI - max(map(len, names)) * char_px - 40
        placed = label_rows(events, axis_px, *xlim, char_px)
        rows = {lane: 1 + max([r for ln, _, _, r, _ in placed if ln == lane],
                              default=-1) for lane in names}
        y, ys = 0.0, {}
        for lane in names:  # bottom up: the bar, then its rows of labels
            ys[lane] = y
            y += 0.6 + (rows[lane] * row_px + 6) / UNIT_PX
        layouts.append((names, xlim, placed, ys, y))
    # each axes' own margins (its title, ticks and their labels): 6.5 TEXT
    heights = [top * UNIT_PX / DPI + 6.5 * TEXT / 72 for *_, top in layouts]
    fig, _ = new_figure(FIT_INCHES, sum(heights) + 0.6)
    fig.clear()
    grid = fig.add_gridspec(len(shown), 1, height_ratios=heights)
    for i, ((name, lanes, _), (names, xlim, placed, ys, top)) in enumerate(
            zip(shown, layouts, strict=True)):
        ax = fig.add_subplot(grid[i])
        for lane, start, end, colour in lanes:
            ax.barh(ys[lane], max(end - start, 0.0), left=start, height=0.4,
                    color=COLOURS.get(colour, colour))
        for lane, at, label, row, dx in placed:
            ax.plot([at], [ys[lane]], marker="v", color="black", markersize=5)
            ax.annotate(label, (at, ys[lane] + 0.25), xytext=(dx, 3 + row * row_px),
                        textcoords="offset pixels", fontsize=TEXT, ha="left",
                        va="bottom")
        ax.set_yticks([ys[lane] for lane in names], names, fontsize=TEXT)
        ax.tick_params(axis="x", labelsize=TEXT)
        ax.set_ylim(-0.4, top)
        ax.set_title(name, fontsize=TEXT, loc="left")
        ax.set_xlim(*xlim)
    fig.axes[-1].set_xlabel("s since the trial's first recorded instant",
                            fontsize=TEXT)
    more = f" (first {MAX_TRIALS} of {len(trials)} trials)" if len(trials) > len(
        shown) else ""
    # in the top 0.4 inch the layout leaves it, however tall the figure
    fig.suptitle(f"{title}{more}", fontsize=TEXT + 1, va="top",
                 y=1 - 0.1 / fig.get_figheight())
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / fig.get_figheight()))
    return fig


class BadEvidence(ValueError):
    """The file is not a checkpoint's evidence (one line says why)."""


def read_evidence(path: Path) -> dict:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadEvidence(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BadEvidence(f"{path}: cannot be read ({error})") from None
    except json.JSONDecodeError as error:
        raise BadEvidence(f"{path}: not JSON ({error.msg}, line {error.lineno})"
                          ) from None
    if not isinstance(document, dict) or not isinstance(document.get("trials"), list):
        raise BadEvidence(f"{path}: not a checkpoint's evidence (no list of trials)")
    return document


def write(path: Path, formats: tuple[str, ...] = ("png", "svg")) -> list[Path]:
    """Draw ``path``'s evidence beside it (EVIDENCE.png, .svg): the files
    written, none when no trial records an instant. Refuses (BadEvidence) a
    file that is not evidence; an existing picture is replaced (it is drawn
    from the evidence, which is never overwritten)."""
    from crashcourse.figures import DPI

    path = Path(path)
    document = read_evidence(path)
    fig = draw(document, title=str(document.get("schema") or path.stem))
    if fig is None:
        return []
    written = []
    for suffix in formats:
        out = path.with_suffix(f".{suffix}")
        fig.savefig(out, dpi=DPI)
        written.append(out)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argument_parser(__doc__.split("\n\n")[0].splitlines()[0])
    parser.add_argument("evidence", type=Path, help="a checkpoint's evidence JSON")
    parser.add_argument("--format", choices=("png", "svg", "both"), default="both",
                        help="which picture to write beside it (default: both)")
    args = parser.parse_args(argv)
    formats = ("png", "svg") if args.format == "both" else (args.format,)
    try:
        written = write(args.evidence, formats)
    except BadEvidence as error:
        print(f"evidence timeline: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"evidence timeline: cannot write beside {args.evidence}: {error}",
              file=sys.stderr)
        return 2
    if not written:
        print(f"evidence timeline: {args.evidence}: no trial records an instant"
              " to draw", file=sys.stderr)
        return 1
    print(" ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
