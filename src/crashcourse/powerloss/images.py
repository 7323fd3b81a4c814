"""Crash images: the disk as a power cut at any point of a run leaves it (ch. 11).

BOOK-ONLY, with ``powerloss.vfs`` (which imports ``apsw``). A recorded run
(``powerloss.vfs.Recorder``) is replayed event by event. After the first k
events (every k from 0 to the last: crash point k) the disk holds:

* each file's DURABLE bytes: its bytes at the start, then every write and
  truncation followed by an ``xSync`` of that same file before point k;
* the folder's durable entries: the names at the start, then every
  ``create`` and ``delete`` followed by a ``dirsync`` before point k. A
  deleted file whose unlink was not yet durable is still there, with its
  own durable bytes (the stale journal that rolls a commit back); a new file
  whose entry was not yet durable is not.

Two models of what else survives:

* ``SYNCED_ONLY``, the synced-only model: nothing else. One image per crash
  point: the most pessimistic model of WHAT survives.
* ``UNSYNCED_SUBSETS``, the unsynced-subsets model: the writes since each
  file's last sync may have reached the disk too, ANY subset of them, cut at
  ``grain`` bytes (512, a sector; 4096, a page): each piece survives or not,
  independently, whatever the order it was written in (the adversarial model
  for ORDER: a later piece may survive without an earlier one). Entries made
  or removed since the last folder sync survive as a prefix (the file systems
  here journal them in order). When a point has at most ``budget`` such
  images all are explored; else ``budget`` of them: "none" (the synced-only
  image), "all" (what a killed process leaves: every write had reached the
  operating system), up to half the rest IN-ORDER PREFIXES (a disk that wrote
  the pieces in the order they were made and stopped), and the others drawn
  at random by a seeded generator.

POSIX allows more than both: a torn sector holding neither the old bytes nor
the new, pages dropped after an fsync that failed, a file's new size kept
without its data. Neither model produces those.

Each image is written into a scratch folder and handed to a ``judge``, which
opens it with the standard library's ``sqlite3``; ``judge_database`` is the
judgement every experiment starts from: ``PRAGMA integrity_check`` and rows.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import sqlite3
import tempfile
from collections import namedtuple
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path

from crashcourse.powerloss.vfs import (
    CREATE,
    DELETE,
    DIRSYNC,
    SYNC,
    TRUNCATE,
    WRITE,
    Recorder,
)

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["SCRATCH", "State", "Point", "crash_states", "possible", "images",
    "lay_out", "image_at", "explore", "judge_database", "SECTOR", "SYNCED_ONLY",
    "UNSYNCED_SUBSETS"]

SYNCED_ONLY, UNSYNCED_SUBSETS = "synced_only", "unsynced_subsets"  # the two models
SECTOR, PAGE = 512, 4096
# Images are judged in memory when the machine has a tmpfs: opening one
# writes (recovery, a resume), and an image's fsyncs would cost, not protect.
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None

State = namedtuple("State", "point durable_names pending_names files")
Point = namedtuple("Point", "point event verdicts sampled", defaults=(False,))


class _File:
    """One life of a file name: a new ``create`` of the name is a new life.
    ``pending``: its unsynced writes and truncations, each with the crash
    point it was made at (the order of pieces across files)."""

    __slots__ = ("durable", "pending")

    def __init__(self, data: bytes = b""):
        self.durable, self.pending = data, []


def _apply(data: bytes | bytearray, operations) -> bytes:
    """``data`` after the (kind, offset, bytes) writes and truncations."""
    content = bytearray(data)
    for kind, offset, chunk in operations:
        if kind == TRUNCATE:
            del content[offset:]
            content.extend(bytes(offset - len(content)))
        else:  # a write past the end leaves zeros in between
            content.extend(bytes(max(0, offset - len(content))))
            content[offset:offset + len(chunk)] = chunk
    return bytes(content)


def crash_states(recorder: Recorder) -> Iterator[State]:
    """The durable state at every crash point 0..len(events) (chapter 11)."""
    running = {name: _File(data) for name, data in recorder.base.items()}
    on_disk, pending_names = dict(running), []
    yield _state(0, on_disk, pending_names)
    for point, event in enumerate(recorder.events, start=1):
        if event.kind == CREATE:
            running[event.name] = _File()
            pending_names.append((event.name, running[event.name]))
        elif event.kind == DELETE:
            running.pop(event.name, None)
            pending_names.append((event.name, None))
        elif event.kind == DIRSYNC:
            on_disk.update(pending_names)
            pending_names = []
        elif event.kind in (WRITE, TRUNCATE):
            running[event.name].pending.append(
                (point, (event.kind, event.offset, event.data)))
        elif event.kind == SYNC:
            life = running[event.name]
            ops = [op for _, op in life.pending]
            life.durable = _apply(life.durable, ops)
            life.pending = []
        yield _state(point, on_disk, pending_names)


def _state(point: int, on_disk: dict, pending_names: list) -> State:
    lives = {id(f): f for f in [*on_disk.values(), *(f for _, f in pending_names)]
             if f is not None}
    files = {key: (f.durable, tuple(f.pending)) for key, f in lives.items()}
    return State(point, {n: id(f) for n, f in on_disk.items() if f is not None},
                 tuple((n, None if f is None else id(f)) for n, f in pending_names),
                 files)


def _pieces(state: State, grain: int) -> list[tuple[int, tuple]]:
    """Every unsynced write cut at ``grain``-aligned offsets, and every
    unsynced truncation, as (file, operation), in the order they were made
    (across files too)."""
    pieces = []
    for key, (_, pending) in state.files.items():
        for made, (kind, offset, data) in pending:
            if kind == TRUNCATE:
                pieces.append((made, key, (kind, offset, data)))
                continue
            cut = offset
            while cut < offset + len(data):
                end = min(offset + len(data), (cut // grain + 1) * grain)
                pieces.append((made, key, (kind, cut, data[cut - offset:end - offset])))
                cut = end
    pieces.sort(key=lambda piece: piece[0])  # stable: a write's sectors in order
    return [(key, operation) for _, key, operation in pieces]


def _image(state: State, prefix: int, pieces, keep) -> dict[str, bytes]:
    names = dict(state.durable_names)
    names.update(state.pending_names[:prefix])
    kept: dict[int, list] = {}
    for index, (key, operation) in enumerate(pieces):
        if keep >> index & 1:
            kept.setdefault(key, []).append(operation)
    return {name: _apply(state.files[key][0], kept.get(key, ()))
            for name, key in names.items() if key is not None}


def possible(state: State, grain: int = SECTOR) -> int:
    """How many images the unsynced-subsets model allows at this point,
    before any dedupe (chapter 11)."""
    return (len(state.pending_names) + 1) << len(_pieces(state, grain))


def images(state: State, model: str, *, grain: int = SECTOR, budget: int = 16,
           seed: int = 0) -> list[dict[str, bytes]]:
    """The crash images of one point under ``model`` (chapter 11)."""
    if model == SYNCED_ONLY:
        return [_image(state, 0, [], 0)]
    if model != UNSYNCED_SUBSETS:
        raise ValueError(f"model must be {SYNCED_ONLY!r} or {UNSYNCED_SUBSETS!r}")
    pieces = _pieces(state, grain)
    names, count = len(state.pending_names), len(pieces)
    if (names + 1) << count <= budget:  # few enough: every one of them
        choices = [(p, keep) for p in range(names + 1) for keep in range(1 << count)]
    else:
        choices = {(0, 0), (names, (1 << count) - 1)}  # none, and all
        wanted = (budget - len(choices)) // 2  # in order: the first k pieces
        for i in range(1, wanted + 1):
            choices.add((names, (1 << (count * i // (wanted + 1))) - 1))
        draw = random.Random(f"{seed}:{state.point}")
        while len(choices) < budget:
            choices.add((draw.randrange(names + 1), draw.getrandbits(count)))
        choices = sorted(choices)
    return [_image(state, p, pieces, keep) for p, keep in choices]


def lay_out(image: dict[str, bytes], folder: str | os.PathLike) -> Path:
    """Write a crash image's files into ``folder`` (made, and empty): the
    disk after the cut, for any program to open (chapter 11)."""
    folder = Path(folder)
    folder.mkdir(parents=True)
    for name, data in image.items():
        (folder / name).write_bytes(data)
    return folder


def image_at(recorder: Recorder, point: int, *,
             killed: bool = False) -> dict[str, bytes]:
    """The files at crash point ``point``: as a power cut leaves them (model
    A), or, ``killed``, as the operating system holds them, every write and
    unlink included: what a killed process leaves (chapter 11)."""
    state = next(islice(crash_states(recorder), point, None))
    if not killed:
        return _image(state, 0, [], 0)
    pieces = _pieces(state, 1 << 40)  # whole writes: nothing is cut
    return _image(state, len(state.pending_names), pieces, (1 << len(pieces)) - 1)


def explore(recorder: Recorder, judge: Callable[[Path], dict], *,
            model: str = SYNCED_ONLY, grain: int = SECTOR, budget: int = 16,
            seed: int = 0) -> list[Point]:
    """``judge`` every crash image of every point of the run (chapter 11).

    ``judge(folder)`` opens the image written into ``folder`` (it may write
    there: a resume) and returns a JSON-able verdict. Identical images are
    judged once. Returns one ``Point`` per crash point, with what the event
    that point follows was (None for point 0), the verdicts of its images
    and whether they were a sample (more images possible than ``budget``).
    """
    seen: dict[str, dict] = {}
    points = []
    with tempfile.TemporaryDirectory(prefix="crash-image-", dir=SCRATCH) as scratch:
        folder = Path(scratch)
        for state in crash_states(recorder):
            verdicts = []
            for image in images(state, model, grain=grain, budget=budget, seed=seed):
                digest = _digest(image)
                if digest not in seen:
                    seen[digest] = _judged(folder, image, judge)
                verdicts.append(seen[digest])
            event = recorder.events[state.point - 1] if state.point else None
            sampled = model == UNSYNCED_SUBSETS and possible(state, grain) > budget
            points.append(Point(state.point, event and event.kind, verdicts, sampled))
    return points


def _digest(image: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in sorted(image):
        digest.update(f"{name}\0{len(image[name])}\0".encode())
        digest.update(image[name])
    return digest.hexdigest()


def _judged(folder: Path, image: dict[str, bytes], judge) -> dict:
    for entry in folder.iterdir():  # the last image, and what opening it made
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for name, data in image.items():
        (folder / name).write_bytes(data)
    return judge(folder)


def judge_database(path: str | os.PathLike, read: Callable | None = None) -> dict:
    """Judge a crash image's database, opened with the standard ``sqlite3``
    (without creating it): ``corrupt`` when it is missing, unreadable or fails
    ``PRAGMA integrity_check``; else what ``read(conn)`` returns (chapter 11)."""
    if not os.path.exists(path):
        return {"corrupt": True, "problems": ["missing"]}
    uri = Path(path).absolute().as_uri() + "?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        try:
            problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            if problems != ["ok"]:
                return {"corrupt": True, "problems": problems[:3]}
            return {"corrupt": False, **(read(conn) if read else {})}
        finally:
            conn.close()
    except sqlite3.DatabaseError as unreadable:
        return {"corrupt": True, "problems": [str(unreadable)]}
