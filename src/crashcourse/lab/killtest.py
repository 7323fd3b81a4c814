"""A kill test for the reader's own agent (chapter 12).

    python -m crashcourse.lab.killtest --count MODULE:FUNCTION [--trials N]
        [--seed S] [--boundary NAME ...] [--output PATH] [--timeout S]
        [--resumes N] -- COMMAND...

COMMAND runs the reader's agent once; run again, it must resume from its own
durable state (a checkpointer, a workflow database, chapter 07's journal).
``FUNCTION()`` in ``MODULE`` (imported from the project's directory) reads
the services the agent acts on and returns a dict: effect name -> how many
happened (rows at the mail provider, orders at the supplier), never what the
agent says it did.

Every run starts in a FRESH COPY of the directory the kill test was started
in (``.git``, ``.venv``, ``node_modules`` and ``__pycache__`` left out), and
COMMAND and ``count()`` run there. First COMMAND runs uninterrupted once:
its counts are the yardstick. Then each trial, in a new copy, starts
COMMAND in its own process group and SIGKILLs the whole group, in turn:

* at a boundary: the adapter's marks (``crashcourse.adapters.EffectTool``
  runs each call as a one-step journal plan, announcing
  ``step-1:after_intent``, ``step-1:admitted``, ``step-1:after_action`` and
  ``step-1:after_outcome`` at its first call), and any the reader marks in
  their own code with ``crashcourse.boundary.boundary(NAME)`` and names with
  ``--boundary NAME``; a boundary the run never reached is said so (the run
  went to its end), and the trial still counts;
* at a random instant within the uninterrupted run's duration (seeded).

Then it runs COMMAND again until it exits 0 (at most ``--resumes`` times),
calls ``count()`` in that copy and compares. One line per trial, a summary,
and per-trial evidence (JSON, never overwritten) at ``--output``. Exit 0
only when no trial's count of any effect exceeds the uninterrupted run's, 1
when some did (a duplicate) or a trial never finished, 2 for bad usage (no
command, a ``count`` that cannot be imported or answers no dict of counts,
a COMMAND that cannot be started, an uninterrupted run that fails, an
``--output`` that exists).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crashcourse.boundary import CONTROL_FD_ENV, MARKER_FD_ENV, STOP_AT_ENV
from crashcourse.lab import evidence
from crashcourse.validate import seconds

EVIDENCE_ID = "crashcourse/killtest/1"
ADAPTER_BOUNDARIES = ("step-1:after_intent", "step-1:admitted",
                      "step-1:after_action", "step-1:after_outcome")
RANDOM = "random instant"
LEFT_OUT = (".git", ".venv", "node_modules", "__pycache__")
COUNT_CODE = """import json, sys
sys.path.insert(0, ".")
module, _, function = sys.argv[1].partition(":")
counts = getattr(__import__(module, fromlist=[function]), function)()
print(json.dumps(counts))
"""


class Usage(Exception):
    """Bad usage: exit 2, one line."""


class Unfinished(Exception):
    """A run that overran its timeout, or never exited 0 when resumed."""


def fresh_copy(source: Path, into: Path) -> Path:
    shutil.copytree(source, into, symlinks=True,
                    ignore=shutil.ignore_patterns(*LEFT_OUT))
    return into


def start(command: list[str], where: Path, stop_at: str | None = None):
    """COMMAND in its own group; with ``stop_at``, the boundary's pipes
    (``crashcourse.boundary``): (process, marker read end, control write end)."""
    env = {k: v for k, v in os.environ.items() if k != STOP_AT_ENV}
    marker = control = None
    passed: tuple[int, ...] = ()
    if stop_at is not None:
        marker_r, marker_w = os.pipe()
        control_r, control_w = os.pipe()
        passed, marker, control = (marker_w, control_r), marker_r, control_w
        env |= {STOP_AT_ENV: stop_at, MARKER_FD_ENV: str(marker_w),
                CONTROL_FD_ENV: str(control_r)}
    try:
        process = subprocess.Popen(command, cwd=where, env=env, pass_fds=passed,
                                   stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as error:  # no such program, not executable: bad usage
        for fd in (*passed, marker, control):
            if fd is not None:
                os.close(fd)
        raise Usage(unstartable(command[0], error)) from None
    for fd in passed:
        os.close(fd)
    return process, marker, control


def unstartable(program: str, error: OSError) -> str:
    """One line: why COMMAND did not start in the copy. A relative path is
    looked up in the copy, which leaves ``LEFT_OUT`` out (``.venv/bin/python``
    is not there)."""
    why = error.strerror or type(error).__name__
    hint = ""
    if (isinstance(error, FileNotFoundError) and not os.path.isabs(program)
            and os.sep in program):
        hint = (" (a relative path is resolved in the fresh copy, which leaves out "
                f"{', '.join(LEFT_OUT)}: give an absolute path)")
    return f"COMMAND {program!r} cannot be started: {why}{hint}"


def kill_group(process: subprocess.Popen) -> int:
    """SIGKILL the process group (also what is left of it after an exit)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    return process.returncode


def finished(process: subprocess.Popen, timeout: float) -> tuple[int, str]:
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process)
        raise Unfinished(f"a run overran {timeout} s; killed") from None
    kill_group(process)  # whatever it left running in its group
    return process.returncode, (err or b"").decode(errors="replace")[-800:]


def run_once(command: list[str], where: Path, timeout: float) -> tuple[int, str]:
    return finished(start(command, where)[0], timeout)


def count(spec: str, where: Path, timeout: float) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", COUNT_CODE, spec], cwd=where,
                          capture_output=True, text=True, timeout=timeout,
                          check=False)
    if done.returncode != 0:
        raise Usage(f"count {spec} failed in {where}: "
                    f"{done.stderr.strip().splitlines()[-1:]}")
    try:
        counts = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        counts = None
    if not isinstance(counts, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
            for k, v in counts.items()):
        raise Usage(f"count {spec} must return a dict: effect name -> int,"
                    f" got {done.stdout.strip()[-200:]!r}")
    return counts


def interrupted(command: list[str], where: Path, point: str, delay: float,
                timeout: float) -> dict:
    """One kill: at boundary ``point`` (or after ``delay`` s for a random
    instant), the group SIGKILLed; what happened."""
    if point == RANDOM:
        process, _, _ = start(command, where)
        try:
            process.wait(timeout=delay)
            return {"killed": False, "exit": process.returncode,
                    "why": f"exited before {delay:.3f} s"}
        except subprocess.TimeoutExpired:
            return {"killed": True, "exit": kill_group(process),
                    "at_s": round(delay, 3)}
    process, marker, control = start(command, where, stop_at=point)
    try:
        ready, _, _ = select.select([marker], [], [], timeout)
        line = os.read(marker, 256).decode() if ready else None
        if line is None:
            kill_group(process)
            raise Unfinished(f"never reached {point} nor exited within {timeout} s")
        if line.strip() != point:  # the pipe closed: it exited without it
            process.wait()
            return {"killed": False, "exit": process.returncode,
                    "why": f"never reached {point}"}
        return {"killed": True, "exit": kill_group(process)}
    finally:
        for fd in (marker, control):
            os.close(fd)


def trial(n: int, point: str, delay: float, args, source: Path, root: Path,
          baseline: dict) -> dict:
    where = fresh_copy(source, root / f"trial-{n}")
    found = {"trial": n, "kill_point": point}
    try:
        found |= interrupted(args.command, where, point, delay, args.timeout)
        runs = []
        while not runs or runs[-1] != 0:
            if len(runs) == args.resumes:
                raise Unfinished(f"not finished after {len(runs)} resumes,"
                                 f" exits {runs}")
            code, err = run_once(args.command, where, args.timeout)
            runs.append(code)
            found["last_stderr"] = err if code else ""
        found["resume_exits"] = runs
        found["counts"] = count(args.count, where, args.timeout)
    except Unfinished as error:
        return {**found, "error": str(error), "exceeds": {}, "holds": False}
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)
    exceeds = {name: n for name, n in found["counts"].items()
               if n > baseline.get(name, 0)}
    return {**found, "exceeds": exceeds, "holds": not exceeds}


def said(found: dict, baseline: dict) -> str:
    where = found["kill_point"] + (f" ({found['at_s']} s)" if "at_s" in found else "")
    if "error" in found:
        return f"trial {found['trial']}: {where}: DID NOT FINISH: {found['error']}"
    how = "killed" if found["killed"] else found["why"]
    verdict = (f"DUPLICATES {found['exceeds']}" if found["exceeds"]
               else "no duplicate")
    return (f"trial {found['trial']}: {where}: {how}; resumed in "
            f"{len(found['resume_exits'])} run(s); counts {found['counts']}"
            f" (uninterrupted {baseline}): {verdict}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m crashcourse.lab.killtest", description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", required=True, metavar="MODULE:FUNCTION")
    parser.add_argument("--trials", type=int, default=10, metavar="N")
    parser.add_argument("--seed", type=int, default=0, metavar="S")
    parser.add_argument("--boundary", action="append", default=[], metavar="NAME",
                        help="a boundary your code marks (repeatable)")
    parser.add_argument("--output", type=Path, default=None, metavar="PATH",
                        help="the evidence (default killtest-UNIXTIME.json here)")
    parser.add_argument("--timeout", type=seconds, default=120.0, metavar="S",
                        help="the longest one run may take (default %(default)s)")
    parser.add_argument("--resumes", type=int, default=5, metavar="N",
                        help="re-runs allowed to finish a trial (default %(default)s)")
    parser.add_argument("--keep", action="store_true",
                        help="keep each trial's copy (printed)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND")
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no COMMAND: give it after --")
    module, colon, function = args.count.partition(":")
    if not (module and colon and function):
        parser.error("--count must be MODULE:FUNCTION")
    if args.trials < 1 or args.resumes < 1 or args.timeout <= 0:
        parser.error("--trials and --resumes must be >= 1, --timeout > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    source = Path.cwd()
    output = args.output or source / f"killtest-{int(time.time())}.json"
    if evidence.refused_output(output):
        return 2
    points = [*ADAPTER_BOUNDARIES, *args.boundary, RANDOM]
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="killtest-"))
    try:
        where = fresh_copy(source, root / "uninterrupted")
        started = time.monotonic()
        code, err = run_once(args.command, where, args.timeout)
        took = time.monotonic() - started
        if code != 0:
            raise Usage(f"the uninterrupted run exited {code}: {err.strip()[-300:]}")
        baseline = count(args.count, where, args.timeout)
        print(f"uninterrupted: exit 0 in {took:.2f} s; counts {baseline}")
        trials = []
        for n in range(1, args.trials + 1):
            point = points[(n - 1) % len(points)]
            found = trial(n, point, rng.uniform(0, took), args, source, root, baseline)
            trials.append(found)
            print(said(found, baseline), flush=True)
    except (Usage, Unfinished) as error:
        print(f"killtest: {error}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"copies kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    duplicated = [t["trial"] for t in trials if t["exceeds"]]
    unfinished = [t["trial"] for t in trials if "error" in t]
    summary = {"trials": len(trials), "uninterrupted": baseline,
               "uninterrupted_s": round(took, 3), "seed": args.seed,
               "command": args.command, "count": args.count,
               "killed": sum(bool(t.get("killed")) for t in trials),
               "trials_with_duplicates": duplicated, "unfinished": unfinished}
    evidence.record(output, EVIDENCE_ID, __file__, summary, trials,
                    argv=sys.argv if argv is None else ["killtest", *argv])
    print(f"{len(trials)} trials, {summary['killed']} killed: "
          f"{len(duplicated)} with duplicates {duplicated or ''}".rstrip()
          + (f", {len(unfinished)} unfinished {unfinished}" if unfinished else "")
          + f" -> {output}")
    return 1 if duplicated or unfinished else 0


if __name__ == "__main__":
    sys.exit(main())
