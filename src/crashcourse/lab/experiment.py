"""The one skeleton of every checkpoint script, introduced in chapter 02.

A checkpoint (``checkpoints/chNN_*.py``) says what its trials are and how each
is judged; this module gives every one of them the same command line and the
same sequence, so one chapter's evidence reads like another's.

- ``command_line`` builds the parser: ``--output PATH`` (required), ``--quick``,
  ``--repetitions N`` or ``--trials N`` (one rule: 1 to ``MAX_TRIALS``), and
  ``--seed N`` where the trials are drawn at random. ``--help`` gives each
  option's meaning and default; a script adds its own options to the parser.
- ``Progress`` prints one line on stderr per finished trial:
  ``[3/21] kill_after_payment: holds``, or ``FAILS (why)``.
- ``run_trials`` is the one trial loop. Each ``Trial`` carries its progress
  label, the identity a failed trial keeps, and its arguments; each runs as
  ``run_one(harness, folder, *args)`` in a fresh folder (under one temporary
  directory) with a ``Harness`` of its own, through ``evidence.attempt``: a
  trial the harness or the machine could not finish comes back failed, its
  identity plus ``error`` and ``holds: False``, while a bug still raises.
  Whatever happens, its workers are killed and reaped and its folder
  removed. One progress line each; results in the trials' order, ``jobs`` at
  a time. A checkpoint says only what its trials are and how one is judged.
- ``script`` is a checkpoint's whole tail: its ``main(argv=None)``.
- ``main`` refuses, before any trial runs, an ``--output`` that exists or
  that could not be written: its directory is missing, is not a directory, or
  refuses a new file (one is made there and removed to find out). Either is
  one line on stderr and exit ``BAD_INPUT`` (2, as argparse's own refusals
  and every worker's bad input), so
  no run is spent on evidence that would be lost. It then runs the trials,
  adds ``elapsed_s`` and ``quick`` to the summary, records the evidence
  (``evidence.record``, under the script's ``EVIDENCE_ID``: what its
  evidence is, and which version) and exits 0 only when every trial holds,
  else ``FAILED`` (1).

Every wait in a checkpoint is bounded by ``TIMEOUT``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from crashcourse.lab import evidence
from crashcourse.lab.harness import DEFAULT_TIMEOUT, Harness, terminate_unwinds
from crashcourse.validate import BAD_INPUT, argument_parser, whole_number

TIMEOUT = DEFAULT_TIMEOUT  # seconds, for a boundary, an exit or a row
MAX_TRIALS = 10_000  # trials (or repetitions) in one run; more is a typo
FAILED = 1  # exit status: a trial failed (BAD_INPUT, 2: refused before any ran)


def parse_count(text: str) -> int:
    """The type of ``--repetitions`` and ``--trials``: a whole number from 1 to
    ``MAX_TRIALS``, with one message for every refusal (chapter 02)."""
    try:
        value = whole_number(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_TRIALS:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 1 to {MAX_TRIALS}, got {text!r}"
        )
    return value


def command_line(
    doc: str,
    *,
    quick_help: str,
    count: str | None = None,
    default: int | None = None,
    count_help: str | None = None,
    seed: int | None = None,
) -> argparse.ArgumentParser:
    """The parser every checkpoint starts from (chapter 02).

    ``doc`` (the script's docstring) heads ``--help``. ``count`` is
    ``"repetitions"`` or ``"trials"`` (with its ``default``), or None for a
    checkpoint of fixed cases; ``--quick`` and the count exclude each other.
    ``seed`` adds ``--seed N`` with that default."""
    parser = argument_parser(  # its errors: one line, exit 2
        doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--output", required=True, type=Path, metavar="PATH",
        help="new JSON evidence file in an existing, writable directory; an "
        "existing path is refused before anything runs, exit 2 (required, no "
        "default)",
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help=f"{quick_help} (default: the full run)")
    if count is not None:
        size.add_argument(
            f"--{count}", type=parse_count, default=default, metavar="N",
            help=f"{count_help or 'how many ' + count}, 1 to {MAX_TRIALS} "
            "(default: %(default)s)",
        )
    if seed is not None:
        parser.add_argument(
            "--seed", type=whole_number, default=seed, metavar="N",
            help="seed of the random draw: the same seed, the same trials "
            "(default: %(default)s)",
        )
    return parser


class Progress:
    """One flushed line per finished trial on ``stream`` (stderr when None),
    numbered out of ``total`` (chapter 02). Safe to call from threads."""

    def __init__(self, total: int, stream: TextIO | None = None):
        self.total, self.done, self.stream = total, 0, stream
        self._lock = threading.Lock()

    def report(self, label: str, trial: dict) -> dict:
        """Print ``[i/N] label: holds`` or ``... FAILS (why)``; return ``trial``."""
        verdict = "holds" if trial.get("holds") is True else "FAILS"
        failed = [name for name, ok in trial.get("checks", {}).items() if not ok]
        why = trial.get("error") or ", ".join(failed)
        if verdict == "FAILS" and why:
            verdict += f" ({why})"
        with self._lock:
            self.done += 1
            print(f"[{self.done}/{self.total}] {label}: {verdict}",
                  file=self.stream or sys.stderr, flush=True)
        return trial


@dataclass(frozen=True)
class Trial:
    """One trial for ``run_trials`` (chapter 02): ``label`` heads its progress
    line; ``identity`` is what its record keeps should the harness or the
    machine not let it finish (the fields that say which trial it was);
    ``args`` follow the harness and the folder in the call to ``run_one``."""

    label: str
    identity: dict = field(default_factory=dict)
    args: tuple = ()


def run_trials(
    trials: Iterable[Trial],
    run_one: Callable[..., dict],
    *,
    jobs: int = 1,
    env: dict | None = None,
    where: str | Path | None = None,
    failed: Callable[[dict, Path], dict] | None = None,
    timed: str | None = None,
    progress: bool = True,
) -> list[dict]:
    """Every trial, as ``run_one(harness, folder, *trial.args)``; the records
    in the trials' order (chapter 02).

    Each trial gets a new, empty ``folder`` under one temporary directory
    (made in ``where``, else the system's) and a ``Harness`` of its own
    (``env`` added to its workers' environment), and runs through
    ``evidence.attempt``: a trial the harness or the machine could not
    finish is recorded as ``trial.identity`` plus its ``error`` and
    ``holds: False``; any other exception is a bug and propagates, the
    trials not yet started are dropped. When a trial ends, however it
    ends, its harness kills and reaps every process it started and its
    folder is removed.

    ``failed(record, folder)`` may enrich a failed trial's record from what
    its folder still holds (its harness is closed by then: nothing writes).
    ``timed`` names a field given every record: the trial's seconds, harness
    set-up and clean-up included. ``jobs`` trials run at once, each in a
    thread of its own (the work is in their child processes). ``progress``
    prints one line per finished trial (``Progress``)."""
    trials = list(trials)
    shown = Progress(len(trials)) if progress else None
    # With ``jobs`` > 1 every Harness is made in a pool thread, where no
    # signal handler can be set: without this, SIGTERM killed the run at
    # once and left every trial's folder behind (issue 35). Now it raises in
    # this thread; the trials running finish, the rest never start, and the
    # folders go with the ``with`` blocks.
    terminate_unwinds()
    with tempfile.TemporaryDirectory(prefix="trials-", dir=where) as root:

        def one(number: int, trial: Trial) -> dict:
            started, finished = time.monotonic(), []

            def run(harness: Harness, folder: Path) -> dict:
                record = run_one(harness, folder, *trial.args)
                finished.append(True)
                return record

            with tempfile.TemporaryDirectory(prefix=f"{number:04d}-",
                                             dir=root) as folder:
                with Harness(env=env) as harness:
                    record = evidence.attempt(trial.identity, run, harness,
                                              Path(folder))
                if not finished and failed is not None:
                    record = failed(record, Path(folder))
            if timed is not None:
                record = {**record,
                          timed: round(time.monotonic() - started, 3)}
            return shown.report(trial.label, record) if shown else record

        if jobs == 1:
            return [one(number, trial) for number, trial in enumerate(trials, 1)]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            running = [pool.submit(one, number, trial)
                       for number, trial in enumerate(trials, 1)]
            try:
                return [future.result() for future in running]
            except BaseException:
                for future in running:
                    future.cancel()  # those not started; the rest end first
                raise


Run = Callable[[argparse.Namespace], Sequence]
# Room an evidence file must find before the first trial: above the largest
# any checkpoint has written (ch12's, 2.3 MB), four times over.
PROBE_BYTES = 8 * 2**20


def unwritable(output: Path) -> str | None:
    """Why no evidence file could be made at ``output``, or None (chapter 02).

    Asked before the first trial: its directory must exist and take a new
    file WITH ROOM for the evidence, so a run never ends by losing its
    evidence. A probe file is made there, ``PROBE_BYTES`` reserved in it
    (``posix_fallocate``: the blocks are really allocated, so a full disk
    says so now; an empty file fitted on a full disk, and a checkpoint ran
    every trial before it could not write them, issue 35), and removed at
    once; it is the only thing this writes."""
    folder = output.absolute().parent
    if not folder.is_dir():
        return f"{output}: {folder} is not an existing directory"
    try:
        handle, probe = tempfile.mkstemp(prefix=".writable-", dir=folder)
    except OSError as refused:
        return f"{output}: cannot write in {folder} ({refused.strerror})"
    try:
        os.posix_fallocate(handle, 0, PROBE_BYTES)
    except OSError as refused:
        return (f"{output}: no room for the evidence in {folder}"
                f" ({PROBE_BYTES // 2**20} MiB asked: {refused.strerror})")
    finally:
        os.close(handle)
        os.unlink(probe)
    return None


def main(
    argv: list[str] | None,
    *,
    parser: argparse.ArgumentParser,
    evidence_id: str | None = None,
    script: str | Path,
    run: Run,
    check: Callable[[argparse.Namespace], str | None] | None = None,
    schema: str | None = None,
) -> int:
    """Parse, refuse an existing or unwritable ``--output`` (``BAD_INPUT``),
    run, record, judge (chapter 02).

    ``evidence_id`` says what the evidence is and its version
    (``"crashcourse.ch01.operation_keys/1"``), the document's ``schema``
    field. (``schema=`` is its retired keyword, kept only until chapter 12's
    checkpoint says ``evidence_id=``.)

    ``check(args)``, if given, says why options that each parsed cannot go
    together (refused like any bad usage: one line, exit 2), or None.
    ``run(args)`` returns ``(summary, trials)``, or ``(summary, trials, extra)``
    where ``extra`` holds further top-level fields of the evidence; its
    ``manifest``, if any, adds fields to the manifest (what ran: a server's
    version). Returns 0 when there are trials and every one has
    ``holds: True``, else ``FAILED``."""
    evidence_id = evidence_id or schema
    if not evidence_id:
        raise TypeError("main() needs evidence_id=")
    args = parser.parse_args(argv)
    if check is not None and (why := check(args)) is not None:
        parser.error(why)  # exits BAD_INPUT, before the output is even looked at
    if evidence.refused_output(args.output):
        return BAD_INPUT
    if (why := unwritable(args.output)) is not None:
        print(f"refused: {why}", file=sys.stderr, flush=True)
        return BAD_INPUT
    started = time.monotonic()
    try:
        summary, trials, *extra = run(args)
    except OSError as refused:  # the machine stopped the run: a full TMPDIR...
        summary, trials, extra = {"error": f"{type(refused).__name__}: "
                                           f"{refused}"}, [], []
        print(f"the trials could not run: {summary['error']}", file=sys.stderr,
              flush=True)
    summary = {**summary, "elapsed_s": round(time.monotonic() - started, 3),
               "quick": args.quick}
    ran = None if argv is None else [str(script), *argv]
    extra = dict(extra[0]) if extra else {}
    if "manifest" in extra:
        extra["manifest"] = {**evidence.manifest(script, ran), **extra["manifest"]}
    try:
        evidence.record(args.output, evidence_id, script, summary, trials,
                        argv=ran, **extra)
    except evidence.EvidenceExists as refused:  # appeared while the trials ran
        print(f"refused: {refused}", file=sys.stderr)
        return BAD_INPUT
    except OSError as lost:  # nothing was left at --output
        print(f"no evidence written to {args.output}: {lost.strerror or lost};"
              f" {len(trials)} trials ran", file=sys.stderr, flush=True)
        return FAILED
    held = sum(trial.get("holds") is True for trial in trials)
    print(f"{held}/{len(trials)} trials hold -> {args.output}",
          file=sys.stderr, flush=True)
    return 0 if trials and held == len(trials) else FAILED


def script(
    path: str | Path,
    *,
    evidence_id: str,
    parser: argparse.ArgumentParser,
    run: Run,
    check: Callable[[argparse.Namespace], str | None] | None = None,
) -> Callable[[list[str] | None], int]:
    """The ``main(argv=None)`` of the checkpoint at ``path`` (its ``__file__``):
    ``main`` above with this script's evidence id, parser and trials
    (chapter 02). A checkpoint ends ``main = experiment.script(...)``."""

    def checkpoint_main(argv: list[str] | None = None) -> int:
        return main(argv, parser=parser, evidence_id=evidence_id, script=path,
                    run=run, check=check)

    return checkpoint_main
