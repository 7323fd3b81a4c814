"""Exercise 11.1, answered: predict what a power cut takes away (chapter 11)."""

from __future__ import annotations

from crashcourse.powerloss.vfs import MARK, SYNC, WRITE


def lost_at(events: list, point: int) -> list[str]:
    """A payment is at risk from its acknowledgement until a sync of the file
    its commit was written to: in FULL that sync comes before the ack (never
    at risk), in NORMAL at the next checkpoint, in OFF never."""
    unsynced: set[str] = set()  # files with writes no sync has covered yet
    at_risk: list[tuple[str, str]] = []  # (key, file its commit went to)
    last_written = None
    for event in events[:point]:
        if event.kind == WRITE:
            unsynced.add(event.name)
            last_written = event.name
        elif event.kind == SYNC:
            unsynced.discard(event.name)
            at_risk = [(key, name) for key, name in at_risk if name != event.name]
        elif event.kind == MARK and event.name == "ack" and last_written in unsynced:
            at_risk.append((event.data, last_written))
    return [key for key, _ in at_risk]
