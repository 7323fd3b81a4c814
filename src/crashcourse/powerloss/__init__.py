"""When the machine loses power: a crash-state explorer (chapter 11).

BOOK-ONLY: this module and ``powerloss.vfs``, ``powerloss.images``,
``powerloss.runs`` and ``powerloss.journal`` import ``apsw``, a dependency of
the book (its lock), not of the runtime. No other module of ``crashcourse``
imports them, so the runtime stays standard-library only.

A SIGKILL leaves every write the process made in the operating system's
cache, and the next opener sees it. A power cut leaves only what had reached
the disk. ``recording`` runs the book's own code unchanged (the payment
service, the worker, the journal) while SQLite's file operations on chosen
files go through a recording VFS; ``powerloss.images`` then rebuilds the disk
as a power cut at every point of that run could leave it, and each image is
opened with the standard ``sqlite3``.

``service_run`` is experiment 1: the payment service making N payments in one
journal mode and ``synchronous`` level; ``tally`` counts, over every crash
image, the acknowledged payments lost (a payment is acknowledged once
``issue_payment`` returned, before the crash point), the corrupt images, and
how the runtime's own open treats each image (``store.StoreDamaged`` for a
damaged one: never trusted, never a sound one refused).

A file's ``Mode`` forces its level whatever the code asks (the question is
what each level does); ``Mode(journal, AS_OPENED)`` keeps the level the code
asked ``store.connect`` for, so the runtime runs as shipped: its services at
FULL (``record=True``), a worker's own file at NORMAL. ``Recorder.asked``
notes, per file, the level the code asked for.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections import namedtuple
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

from crashcourse import store
from crashcourse.powerloss.images import SYNCED_ONLY, explore, judge_database
from crashcourse.powerloss.vfs import MARK, Connection, Recorder, RecordingVFS
from crashcourse.services import payments

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["ACK", "AS_OPENED", "Mode", "SERVICE_MODES", "recording",
    "open_recorded", "set_up_service", "returned_at", "payment_key", "service_run",
    "paid_keys", "runtime_opens", "judge_service", "tally", "evidence_points",
    "asked", "disk_calls", "service_case", "images", "journal", "runs", "vfs",
    "SYNCED_ONLY", "explore", "judge_database", "MARK", "Connection", "Recorder",
    "RecordingVFS"]

ACK = "ack"  # the mark of a payment whose commit returned to its caller


AS_OPENED = "as opened"  # a Mode's level: the one the code asked store.connect for


class Mode(namedtuple("_ModeFields", "journal synchronous")):
    """A journal mode and a ``synchronous`` level, e.g. ``Mode("WAL", "FULL")``
    (chapter 11), or ``AS_OPENED``. ``str(mode)`` is ``"WAL+FULL"``."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"{self.journal}+{self.synchronous}"


SERVICE_MODES = (Mode("WAL", "FULL"), Mode("WAL", "NORMAL"), Mode("DELETE", "FULL"),
                 Mode("WAL", "OFF"))
ORDER_CENTS, CURRENCY = 4000, "USD"


@contextmanager
def recording(folder: str | os.PathLike, modes: dict[str, Mode], *,
              autocheckpoint: int | None = None) -> Iterator[Recorder]:
    """Record every change to the disk the block makes to the files named in
    ``modes`` (names inside ``folder``), each opened in its mode (chapter 11).

    The files as they are now, synced, are every crash image's start. Inside
    the block ``store.connect`` (so ``store.opened`` and every service) opens
    those files through the recording VFS, in the file's mode, by way of
    ``store.opening_with``: the code under test is the book's own, unchanged.
    ``autocheckpoint`` (pages) makes WAL checkpoints happen within a short
    run. Close every connection the block opens before it ends."""
    recorder = Recorder(folder)
    for name, mode in modes.items():  # a journal mode is the file's, on disk
        with store.opened(Path(folder) / name) as conn:
            conn.execute(f"PRAGMA journal_mode={mode.journal}")
    recorder.take_base()
    vfs, folder = RecordingVFS(recorder), recorder.folder

    def connector(path, *, synchronous, busy_timeout_ms, require):
        """Chosen files through the recording VFS; every other one left alone."""
        name = os.path.basename(path)
        if os.path.realpath(os.path.dirname(os.path.abspath(path))) != folder \
                or name not in modes:
            return None
        recorder.asked.setdefault(name, set()).add(synchronous)
        mode = modes[name]
        if mode.synchronous == AS_OPENED:
            mode = Mode(mode.journal, synchronous)
        return open_recorded(path, mode, busy_timeout_ms, require, autocheckpoint)

    try:
        with store.opening_with(connector):
            yield recorder
    finally:
        vfs.unregister()


def open_recorded(path, mode: Mode, busy_timeout_ms: int, require: tuple,
                  autocheckpoint: int | None) -> Connection:
    """One connection through the recording VFS, set up as ``store.connect``
    sets one up, in ``mode`` (whatever level the caller asked for) (ch. 11)."""
    flags = apsw.SQLITE_OPEN_READWRITE | (0 if require else apsw.SQLITE_OPEN_CREATE)
    conn = Connection(path, flags)
    conn.apsw.set_busy_timeout(busy_timeout_ms)
    conn.execute(f"PRAGMA synchronous={mode.synchronous}")
    conn.execute(f"PRAGMA journal_mode={mode.journal}")
    conn.execute("PRAGMA foreign_keys=ON")
    if autocheckpoint is not None:
        conn.execute(f"PRAGMA wal_autocheckpoint={autocheckpoint}")
    if not set(require) <= store.tables(conn):
        conn.close()
        raise store.StoreMissing(f"{path}: not installed")
    return conn


def set_up_service(folder: Path, count: int) -> Path:
    """A payment service with ``count`` approved orders, ``order-0``... (ch. 11)."""
    folder.mkdir(parents=True, exist_ok=True)
    service = folder / "payments.sqlite"
    payments.install(service)
    for i in range(count):
        payments.approve(service, f"order-{i}", ORDER_CENTS, CURRENCY)
    return service


def returned_at(recorder: Recorder, label: str = ACK) -> list[int]:
    """The crash points just after each ``label`` mark: for ``ack``, just
    after each payment returned to its caller (chapter 11)."""
    return [i for i, event in enumerate(recorder.events, start=1)
            if event.kind == MARK and event.name == label]


def payment_key(i: int) -> str:
    """Experiment 1's operation key of payment ``i`` (chapter 11)."""
    return f"power-{i}"


def service_run(folder: str | os.PathLike, mode: Mode, count: int, *,
                held_open: bool = True, autocheckpoint: int | None = 8) -> Recorder:
    """Experiment 1: the payment service makes ``count`` payments in ``mode``,
    recorded; each is marked ``ack`` once ``issue_payment`` returned (ch. 11).

    ``held_open``: a second connection, which does nothing, stays open for
    the whole run, as a dashboard's or a server's would. ``issue_payment``
    opens and closes its own connection per call either way; without the idle
    one, each call's is the last to close, and SQLite checkpoints (with a
    sync) at every last close."""
    folder = Path(folder)
    service = set_up_service(folder, count)
    with recording(folder, {service.name: mode},
                   autocheckpoint=autocheckpoint) as recorder:
        # opened as the service opens its file: it never writes
        idle = (store.connect(service, require=payments.TABLES, record=True)
                if held_open else None)
        try:
            for i in range(count):
                payments.issue_payment(service, payment_key(i), f"order-{i}",
                                       ORDER_CENTS, CURRENCY)
                recorder.mark(ACK, payment_key(i))
        finally:
            if idle is not None:
                idle.close()
    return recorder


def paid_keys(conn: sqlite3.Connection) -> dict:
    """The keys of the payments a crash image holds, and the payments beyond
    the first of any order (a double charge) (chapter 11)."""
    paid = [row[0] for row in conn.execute("SELECT key FROM payments ORDER BY key")]
    orders = conn.execute("SELECT count(DISTINCT order_id) FROM payments")
    return {"paid": paid, "double_charges": len(paid) - orders.fetchone()[0]}


def runtime_opens(folder: Path, name: str, tables: tuple[str, ...],
                  record: bool = True) -> str | None:
    """Would the runtime open this image's ``name``, as the cut left it? None
    if it would; else the error its own open raises (``StoreDamaged``,
    ``StoreMissing``). Tried on a copy: opening recovers a log (chapter 11)."""
    with tempfile.TemporaryDirectory(dir=folder.parent) as scratch:
        copy = Path(scratch) / "image"
        shutil.copytree(folder, copy)
        try:
            with store.opened(copy / name, require=tables, record=record):
                return None
        except store.StoreMissing as refused:  # StoreDamaged is one
            return type(refused).__name__


def judge_service(folder: Path) -> dict:
    """Experiment 1's judgement of one image: intact? which payments? And
    does the payment service's own open refuse it? (chapter 11)"""
    refused = runtime_opens(folder, "payments.sqlite", payments.TABLES)
    return {**judge_database(folder / "payments.sqlite", paid_keys),
            "refused": refused}


def tally(recorder: Recorder, points, *, lost_key: str = "paid") -> dict:
    """Over every image of every point: how many lost an acknowledged
    payment, how many payments that was, how many were corrupt (chapter 11);
    at how many points the images were a sample, not all of them. Where a
    verdict says whether the runtime's own open ``refused`` the image: how
    many it refused, how many corrupt ones it would have trusted and how
    many sound ones it refused.

    ``first_loss`` names the first point that lost one, and which."""
    counts = {"crash_points": len(points),
              "sampled_points": sum(point.sampled for point in points),
              "images": 0, "acknowledged_lost": 0,
              "lost_payments": 0, "corrupt": 0, "double_charges": 0,
              "refused": 0, "refused_sound": 0, "trusted_corrupt": 0,
              "first_loss": None}
    for point in points:
        acked = recorder.marked(ACK, point.point)
        for verdict in point.verdicts:
            counts["images"] += 1
            if "refused" in verdict:  # the judge asked the runtime too
                refused = verdict["refused"] is not None
                counts["refused"] += refused
                counts["trusted_corrupt"] += verdict["corrupt"] and not refused
                counts["refused_sound"] += refused and not verdict["corrupt"]
            if verdict["corrupt"]:
                counts["corrupt"] += 1
                continue
            counts["double_charges"] += verdict["double_charges"]
            lost = sorted(set(acked) - set(verdict[lost_key]))
            counts["acknowledged_lost"] += bool(lost)
            counts["lost_payments"] += len(lost)
            if lost and counts["first_loss"] is None:
                counts["first_loss"] = {"point": point.point, "lost": lost,
                                        "acknowledged": len(acked)}
    return counts


def evidence_points(recorder: Recorder, points, acknowledged=None) -> list[dict]:
    """Every crash point as evidence: the event it follows, what was
    acknowledged by then (``acknowledged(point)``; default: the payments
    marked ``ack``) and its images' verdicts, each distinct verdict once with
    how many images gave it (chapter 11)."""
    shown = []
    for point in points:
        distinct: list[dict] = []
        for verdict in point.verdicts:
            same = next((d for d in distinct if d["verdict"] == verdict), None)
            if same is None:
                distinct.append({"verdict": verdict, "images": 1})
            else:
                same["images"] += 1
        acked = (acknowledged(point.point) if acknowledged
                 else recorder.marked(ACK, point.point))
        shown.append({"point": point.point, "event": point.event,
                      "sampled": point.sampled, "acknowledged": acked,
                      "verdicts": distinct})
    return shown


def asked(recorder: Recorder) -> dict[str, list[str]]:
    """Per recorded file, the ``synchronous`` levels the code asked for (ch. 11)."""
    return {name: sorted(levels) for name, levels in recorder.asked.items()}


def disk_calls(recorder: Recorder) -> dict[str, int]:
    """How many of each event the run made: writes, syncs, dirsyncs (ch. 11)."""
    counts: dict[str, int] = {}
    for event in recorder.events:
        counts[event.kind] = counts.get(event.kind, 0) + 1
    return counts


def service_case(folder: str | os.PathLike, mode: Mode, count: int, *,
                 model: str = SYNCED_ONLY, held_open: bool = True, **options) -> dict:
    """Experiment 1 for one mode and model: the run, explored and counted."""
    recorder = service_run(folder, mode, count, held_open=held_open)
    points = explore(recorder, judge_service, model=model, **options)
    return {"mode": str(mode), "model": model, "payments": count,
            "held_open": held_open, "asked": asked(recorder),
            "disk_calls": disk_calls(recorder),
            **tally(recorder, points), "points": evidence_points(recorder, points)}
