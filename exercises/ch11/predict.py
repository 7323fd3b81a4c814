"""Exercise 11.1: predict what a power cut takes away (chapter 11).

A recorded run of the payment service in WAL mode is a list of
``crashcourse.powerloss.vfs.Event``: ``Event(kind, name, offset, data)``.
The kinds that matter here:

* ``"write"``: bytes written to file ``name`` (the database, or its
  ``-wal``); they reach the disk only once a ``"sync"`` of that same file
  follows them;
* ``"sync"``: an fsync of file ``name``;
* ``"mark"`` with ``name == "ack"``: ``issue_payment`` returned for the
  payment whose operation key is ``data`` (its commit was done).

Crash point ``point`` is the moment after the first ``point`` events.
"""

from __future__ import annotations

from crashcourse.powerloss.vfs import MARK, SYNC, WRITE  # noqa: F401  (the kinds)


def lost_at(events: list, point: int) -> list[str]:
    """The operation keys of the acknowledged payments that a power cut at
    crash point ``point`` takes away, in the order they were acknowledged,
    when only synced writes survive (the synced-only model).

    The service runs in WAL mode, in any ``synchronous`` level: decide from
    the events, not from the level.
    """
    raise NotImplementedError("exercise 11.1: which acknowledgements were synced?")
