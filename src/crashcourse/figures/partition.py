"""The figures of chapter 10: a partition on a timeline, and claims per host.

Book-only, like the rest of ``figures`` (matplotlib is imported inside each
function, and every function returns a closed Figure whose size depends only
on the shape of its input). Both read the rows a case was judged from, never
a worker's report. Colours keep their meaning from ``figures.COLOURS``.
"""

from __future__ import annotations

from collections.abc import Mapping

from crashcourse.figures import COLOURS, TEXT, count_ticks, new_figure, timeline

LEASE, TAKER, SUPPLIER = ("host a: generation 1's lease", "host b: generation 2",
                          "the supplier")
LINK = {"netns": "host a: its link", "frozen": "host a: paused"}  # by host mode
HOST_COLOURS = ("info", "ok", "doubt", "idle")  # host a, b, ...


def partition_lanes(rows: Mapping, cut_at: float, restoring_at: float,
                    mode: str = "netns") -> tuple:
    """Spans and instants of one partitioned holder, in seconds since its
    claim: from ``rows`` (the store's claims, work, refusals; the supplier's
    requests) and the two instants the parent took; ``mode`` names how host
    a was cut off (``hosts.NETNS`` or ``hosts.FROZEN``) (chapter 10)."""
    store, supplier, link = rows["store"], rows["supplier"], LINK[mode]
    first, second = store["claims"][:2]
    start = first["claimed_at"]

    def s(instant: float) -> float:
        return instant - start

    requests = [r for r in supplier["requests"] if r["method"] == "POST"]
    refused = [s(r["at"]) for r in store["refusals"] if r["generation"] == 1]
    lanes = [(LEASE, 0.0, s(first["expires"]), "doubt"),
             (link, s(cut_at), s(restoring_at), "bad"),
             (TAKER, s(second["claimed_at"]), s(store["work"][0]["finished"]), "ok"),
             (SUPPLIER, 0.0, 0.0, "idle")]  # a lane of instants only
    events = [(LEASE, 0.0, "claim, order let out"), (link, s(cut_at), "cut"),
              (link, s(restoring_at), "back"),
              (TAKER, s(second["claimed_at"]), "claim")]
    events += [(SUPPLIER, s(r["at"]), f"{r['answer']} to gen {r['generation']}")
               for r in requests]
    if refused:
        events.append((LEASE, min(refused), f"{len(refused)} late writes refused"))
    return lanes, events


def partition_timeline(rows: Mapping, cut_at: float, restoring_at: float,
                       mode: str = "netns",
                       title: str = "A holder cut off, and its late writes"):
    """``partition_lanes`` drawn as one timeline (chapter 10)."""
    lanes, events = partition_lanes(rows, cut_at, restoring_at, mode)
    return timeline(lanes, events, title=title, xlabel="s since generation 1's claim")


def claims_per_host(per_worker: Mapping[str, int],
                    title: str = "Claims per worker, by host"):
    """One bar per worker (``{"a-0": 21, ...}``, the host before the dash),
    coloured by host, each with its count (chapter 10)."""
    workers = sorted(per_worker)
    names = sorted({worker.split("-")[0] for worker in workers})
    colour = {name: COLOURS[HOST_COLOURS[i % len(HOST_COLOURS)]]
              for i, name in enumerate(names)}
    fig, ax = new_figure(max(5.0, 0.6 * len(workers) + 2), 3.0)
    for x, worker in enumerate(workers):
        host = worker.split("-")[0]
        bars = ax.bar([x], [per_worker[worker]], color=colour[host],
                      label=f"host {host}")
        ax.bar_label(bars, fontsize=TEXT, padding=2)
    handles, labels = ax.get_legend_handles_labels()
    shown = dict(zip(labels, handles, strict=True))  # one legend entry per host
    ax.legend(shown.values(), shown.keys(), fontsize=TEXT)
    ax.set_xticks(range(len(workers)), workers, fontsize=TEXT)
    count_ticks(ax.yaxis)
    ax.margins(y=0.15)
    ax.set(xlabel="worker", ylabel="turns claimed", title=title)
    fig.tight_layout()
    return fig
