"""Adversity as a test matrix (issue 36): every checkpoint's ``--quick`` mode
and every notebook (nbval), several times each, beside neighbours that take
what a trial shares. ``make stress`` runs it; ``make verify`` does not.

    python tools/stress.py [--repeats N] [--adversity NAME ...]
        [--checkpoints NN ...] [--notebooks NN ...] [--no-notebooks]
        [--cpu-hogs N] [--timeout S] [--budget S] [--output PATH]

Adversities (a run's neighbours are started just before it and ended just
after it, so each record says exactly what ran beside it):

- ``cpu``: ``--cpu-hogs`` CPU-bound processes (default: one per core);
- ``twin``: a second copy of the same run, started at the same moment (both
  copies are recorded: a shared cache, port, lock, folder or name shows here);
- ``pg_killer``: a loop that starts a throwaway PostgreSQL server of its own,
  makes and removes two hosts (network namespaces where they can be made,
  taking the machine's subnet lock) and SIGKILLs its server, over and over:
  the neighbours of issue 36's failure. Its cycles are counted in the record;
  a killer that could not run says why there, and the run is still recorded.

Rules. A failed run is NEVER retried. Every wait is bounded: a run past
``--timeout`` seconds is stopped (SIGTERM to its process group, so its
harness unwinds, then SIGKILL) and recorded as failed; runs that would start
past ``--budget`` seconds are recorded as not run, never left out. Only what
this tool started is ended: its children by process group, and then any
process still carrying the run's own ``CRASHCOURSE_STRESS_RUN`` token in its
environment (a server or kernel that left its group), which is killed and
named in the record as ``left_behind``.

The record (default ``bench/results/stress.json``, rewritten whole at the end,
also when stopped early) names the machine (cores, Python, platform), the load
averages at the start and the end, the git commit (and whether the tree was
dirty), the sha256 of the runtime's sources, of this tool and of every
checkpoint and notebook it ran, and per run: what ran, the adversity, held or
not, the exit status, the reason of a failure (the failed trials' errors and
the last lines of the output), the seconds and the load before and after.
A progress line is printed as each run ends.

Exit status: 0 when every run that ran held, 1 otherwise, 2 for bad input
(one line; nothing runs and nothing is written).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from crashcourse.lab import evidence
from crashcourse.lab.processes import wait_gone, wait_group_gone
from crashcourse.validate import argument_parser

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = "crashcourse/stress/1"
ADVERSITIES = ("cpu", "twin", "pg_killer")
TOKEN_ENV = "CRASHCOURSE_STRESS_RUN"
TAIL_LINES = 12
STOP_GRACE_S = 30.0   # SIGTERM to SIGKILL: a harness unwinding its workers and hosts
GONE_GRACE_S = 5.0    # a server or kernel still shutting down when its parent ended
SIGKILL_WAIT_S = 30.0  # a SIGKILLed process goes in ms: this bound catches a hang
KILLER_STOP_S = 90.0  # the PostgreSQL killer finishes its cycle (initdb under load)
NBVAL_CELL_TIMEOUT = 180  # as `make nbval`

# The PostgreSQL killer. It ends when its stdin closes (checked between
# cycles), so its hosts are removed and its folders deleted by its own
# `with` and `stop`; SIGTERM/SIGKILL of its group are only the fallback.
PG_KILLER = r"""
import os, select, signal, sys
from crashcourse.lab import hosts
from crashcourse.store import postgres_server
namespaces = hosts.unavailable() is None
cycles = 0
while not select.select([sys.stdin], [], [], 0)[0]:  # readable: EOF, stop
    server = postgres_server.start()
    try:
        if namespaces:
            with hosts.hosts(("x", "y"), isolate=True):
                pass
        os.kill(server.pid, signal.SIGKILL)  # its own server, killed, not stopped
    finally:
        postgres_server.stop(server, timeout=5.0)
    cycles += 1
    print(f"cycle {cycles} killed {server.pid} hosts "
          f"{'netns' if namespaces else 'none'}", flush=True)
"""


@dataclass(frozen=True)
class Target:
    """One thing to run: a checkpoint in quick mode or one notebook under nbval."""

    kind: str   # "checkpoint" | "notebook"
    name: str   # "ch10_beyond_one_machine" | "10_beyond_one_machine.ipynb"
    path: Path

    def command(self, folder: Path, copy: int) -> tuple[list[str], Path | None]:
        """The argv for one copy, and where a checkpoint writes its evidence."""
        if self.kind == "checkpoint":
            output = folder / f"{self.path.stem}-{copy}-{secrets.token_hex(4)}.json"
            return [sys.executable, str(self.path), "--quick", "--output",
                    str(output)], output
        return [sys.executable, "-m", "pytest", "-q", "-p", "no:langsmith_plugin",
                "-p", "no:cacheprovider", "--nbval", "--nbval-sanitize-with",
                "book/sanitize.cfg", "--nbval-cell-timeout", str(NBVAL_CELL_TIMEOUT),
                str(self.path.relative_to(ROOT))], None


def checkpoints() -> dict[str, Path]:
    found = sorted((ROOT / "checkpoints").glob("ch[0-9][0-9]_*.py"))
    return {p.name[2:4]: p for p in found}


def notebooks() -> dict[str, Path]:
    return {p.name[:2]: p for p in sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))}


def parse(argv: list[str] | None):
    """The command line, checked whole before anything runs (exit 2, one line)."""
    parser = argument_parser(
        __doc__.split("\n\n")[0], __doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2,
                        help="runs of each target beside each adversity (default 2)")
    parser.add_argument("--adversity", action="append", metavar="NAME",
                        help=f"one of {', '.join(ADVERSITIES)}; repeat it for several "
                        "(default: all three)")
    parser.add_argument("--checkpoints", nargs="*", metavar="NN",
                        help="chapters whose checkpoint runs (default: every one; "
                        "none after the flag: no checkpoint)")
    parser.add_argument("--notebooks", nargs="*", metavar="NN",
                        help="chapters whose notebook runs (default: every one)")
    parser.add_argument("--no-notebooks", action="store_true", help="no notebook runs")
    parser.add_argument("--cpu-hogs", type=int, default=os.cpu_count() or 1,
                        help="CPU-bound processes beside a 'cpu' run (default: "
                        "the number of cores)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds one run may take before it is stopped and "
                        "recorded as failed (default 900)")
    parser.add_argument("--budget", type=float, default=3 * 3600.0,
                        help="seconds; a run that would start later is recorded as "
                        "not run (default 10800)")
    parser.add_argument("--output", type=Path,
                        default=ROOT / "bench" / "results" / "stress.json",
                        help="the record (default bench/results/stress.json)")
    args = parser.parse_args(argv)
    args.adversity = args.adversity or list(ADVERSITIES)
    unknown = sorted(set(args.adversity) - set(ADVERSITIES))
    if unknown:
        parser.error(f"unknown adversity {', '.join(unknown)} "
                     f"(one of {', '.join(ADVERSITIES)})")
    if len(set(args.adversity)) != len(args.adversity):
        parser.error("an adversity is named twice")
    if not 1 <= args.repeats <= 100:
        parser.error(f"--repeats must be from 1 to 100, got {args.repeats}")
    if not 1 <= args.cpu_hogs <= 64:
        parser.error(f"--cpu-hogs must be from 1 to 64, got {args.cpu_hogs}")
    for name in ("timeout", "budget"):
        value = getattr(args, name)
        if not (value > 0 and value != float("inf")):  # NaN fails too
            parser.error(f"--{name} must be a positive number of seconds, got {value}")
    if args.no_notebooks and args.notebooks is not None:
        parser.error("--notebooks and --no-notebooks together")
    try:
        args.targets = targets(args.checkpoints, None if not args.no_notebooks
                               else [], args.notebooks)
    except ValueError as bad:
        parser.error(str(bad))
    if not args.targets:
        parser.error("nothing to run: no checkpoint and no notebook chosen")
    output = args.output.resolve()
    if output.is_dir() or not output.parent.is_dir() or not os.access(output.parent,
                                                                      os.W_OK):
        parser.error(f"--output {args.output} is not a file in a writable folder")
    args.output = output
    return args


def targets(asked_checkpoints, forced_notebooks, asked_notebooks) -> list[Target]:
    """The chosen targets (None: every one), unknown chapters refused."""
    chosen = []
    for kind, found, asked in (("checkpoint", checkpoints(), asked_checkpoints),
                               ("notebook", notebooks(),
                                forced_notebooks if forced_notebooks is not None
                                else asked_notebooks)):
        unknown = sorted(set(asked or ()) - set(found))
        if unknown:
            raise ValueError(f"no {kind} for chapter {', '.join(unknown)}")
        for number, path in found.items():
            if asked is None or number in asked:
                name = path.stem if kind == "checkpoint" else path.name
                chosen.append(Target(kind, name, path))
    return chosen


# --- processes: started in groups of their own, marked, ended, swept ---------

def marked_env(token: str) -> dict[str, str]:
    return {**os.environ, TOKEN_ENV: token}


def marked(token: str) -> list[int]:
    """Live processes whose environment carries ``token`` (ours, wherever they
    went: a new session, another user)."""
    needle = f"{TOKEN_ENV}={token}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle in handle.read():
                    with open(f"/proc/{entry}/stat") as stat:
                        if stat.read().rsplit(")", 1)[1].split()[0] != "Z":
                            found.append(int(entry))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


def command_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")[:160]
    except OSError:
        return "?"


def sweep(token: str, grace: float | None = None) -> list[str]:
    """Wait up to ``grace`` s (``GONE_GRACE_S``) for the token's processes to
    end by themselves, then SIGKILL those left and say what they were."""
    deadline = time.monotonic() + (GONE_GRACE_S if grace is None else grace)
    while (left := marked(token)) and time.monotonic() < deadline:
        time.sleep(0.2)  # polling a process's end: the bound is the grace
    named = [f"{pid} {command_of(pid)}" for pid in left]
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # SIGKILL is delivered, not done: wait (bounded) until each is gone or a
    # zombie, so "left nothing behind" is true when this returns; one that
    # outlives the bound is an error that names it, not a silent return.
    for pid in left:
        wait_gone(pid, SIGKILL_WAIT_S, what=f"swept pid {pid}")
    return named


def stop_group(process: subprocess.Popen, grace: float = STOP_GRACE_S) -> None:
    """SIGTERM the process's group, then SIGKILL it past ``grace``; reaped."""
    for signum, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 30.0)):
        if process.poll() is not None:
            break
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            break
        try:
            process.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # the group may outlive its leader (workers): end the rest too
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    wait_group_gone(process.pid, SIGKILL_WAIT_S, what=f"group {process.pid}")


@dataclass
class Neighbours:
    """What an adversity runs beside one run."""

    adversity: str
    token: str
    processes: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    @classmethod
    def start(cls, adversity: str, folder: Path, cpu_hogs: int) -> Neighbours:
        started = cls(adversity, secrets.token_hex(8))
        env = marked_env(started.token)
        if adversity == "cpu":
            for _ in range(cpu_hogs):
                started.processes.append(subprocess.Popen(
                    [sys.executable, "-c", "while True: pass"], env=env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True))
        elif adversity == "pg_killer":
            log = folder / f"pg_killer-{started.token}.log"
            with open(log, "wb") as out:
                started.processes.append(subprocess.Popen(
                    [sys.executable, "-c", PG_KILLER], cwd=ROOT, env=env,
                    stdin=subprocess.PIPE, stdout=out, stderr=out,
                    start_new_session=True))
            started.logs.append(log)
        return started

    def end(self) -> dict:
        """End them (cooperatively where they can), sweep, say what they did."""
        detail: dict = {}
        if self.adversity == "cpu":
            detail["cpu_hogs"] = len(self.processes)
        for process in self.processes:
            if process.stdin is not None:
                process.stdin.close()  # the killer's signal to stop after its cycle
                try:
                    process.wait(KILLER_STOP_S)
                except subprocess.TimeoutExpired:
                    detail["killer_stopped_by_signal"] = True
            stop_group(process, grace=5.0)
        for log in self.logs:
            lines = log.read_text(errors="replace").splitlines()
            cycles = [line for line in lines if line.startswith("cycle ")]
            detail["pg_killer_cycles"] = len(cycles)
            if cycles:  # "cycle N killed PID hosts netns|none"
                detail["pg_killer_hosts"] = cycles[-1].rsplit(" ", 1)[1]
            problems = [line for line in lines if not line.startswith("cycle ")]
            if problems:
                detail["pg_killer_output_tail"] = problems[-TAIL_LINES:]
        left = sweep(self.token)
        if left:
            detail["left_behind"] = left
        return detail


def tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


def evidence_of(output: Path | None) -> dict:
    """From a checkpoint's evidence: trials held and total, the failed ones."""
    if output is None:
        return {}
    try:
        document = json.loads(output.read_text())
    except (OSError, ValueError):
        return {"evidence": "none written"}
    trials = document.get("trials") or []
    failed = [{"name": next((str(t[k]) for k in ("name", "case", "trial", "label",
                                                  "scenario", "kind") if k in t), "?"),
               "error": t.get("error"),
               "checks_failed": sorted(k for k, v in (t.get("checks") or {}).items()
                                       if v is False)}
              for t in trials if isinstance(t, dict) and t.get("holds") is not True]
    return {"trials": len(trials), "trials_held": len(trials) - len(failed),
            **({"failed_trials": failed} if failed else {})}


def execute(commands: list[tuple[list[str], Path | None]], folder: Path,
            timeout: float) -> list[dict]:
    """Start every command at once (a twin is two), each in a group of its own
    and marked; wait for each within ``timeout``; one record per command."""
    began = time.monotonic()
    running = []
    for argv, output in commands:
        token = secrets.token_hex(8)
        out, err = folder / f"{token}.out", folder / f"{token}.err"
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            process = subprocess.Popen(argv, cwd=ROOT, env=marked_env(token),
                                       stdin=subprocess.DEVNULL, stdout=stdout,
                                       stderr=stderr, start_new_session=True)
        running.append((process, token, out, err, output))
    records = []
    try:
        for process, token, out, err, output in running:
            records.append(finish(process, token, out, err, output, began, timeout))
    finally:  # stopped early (SIGTERM, ^C): nothing we started runs on
        for process, token, *_ in running[len(records):]:
            stop_group(process)
            sweep(token, grace=0.0)
    return records


def finish(process: subprocess.Popen, token: str, out: Path, err: Path,
           output: Path | None, began: float, timeout: float) -> dict:
    """Wait for one run within the bound, stop what is left of it, judge it."""
    timed_out = False
    try:
        process.wait(max(0.0, began + timeout - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out = True
    stop_group(process)  # on time: only its group's stragglers, if any
    seconds = round(time.monotonic() - began, 1)
    left = sweep(token)
    holds = process.returncode == 0 and not timed_out
    record = {"returncode": process.returncode, "timed_out": timed_out,
              "seconds": seconds, "holds": holds, **evidence_of(output)}
    if not holds:
        reason = []
        if timed_out:
            reason.append(f"stopped after {timeout:g} s (no exit within --timeout)")
        reason += [f"trial {t['name']}: {t['error']}"
                   for t in record.get("failed_trials", []) if t.get("error")]
        record["reason"] = reason + tail(out) + tail(err)
    if left:
        record["left_behind"] = left
    return record


def one_run(target: Target, adversity: str, repeat: int, folder: Path,
            args) -> list[dict]:
    """One run of ``target`` beside ``adversity``: its neighbours started, the
    run (two copies for a twin), the neighbours ended; a record per copy."""
    copies = 2 if adversity == "twin" else 1
    load_before = [round(x, 2) for x in os.getloadavg()]
    beside = Neighbours.start(adversity, folder, args.cpu_hogs)
    try:
        commands = [target.command(folder, copy) for copy in range(copies)]
        results = execute(commands, folder, args.timeout)
    finally:
        detail = beside.end()
    load_after = [round(x, 2) for x in os.getloadavg()]
    records = []
    for copy, (result, (argv, _)) in enumerate(zip(results, commands, strict=True)):
        command = ["python", *("EVIDENCE.json" if a.startswith(str(folder))
                               else shown(a) for a in argv[1:])]  # no temp name
        records.append({"target": target.kind, "name": target.name,
                        "command": command, "adversity": adversity,
                        "adversity_detail": detail, "repeat": repeat, "copy": copy,
                        "ran": True, "load_before": load_before,
                        "load_after": load_after, **result})
    return records


def shown(path: str | Path) -> str:
    """A path as the record shows it: relative to the repository when inside."""
    path = str(path)
    root = f"{ROOT}{os.sep}"
    return path[len(root):] if path.startswith(root) else path


def progress(number: int, total: int, record: dict) -> str:
    verdict = "held" if record["holds"] else "FAILED"
    trials = (f" trials {record['trials_held']}/{record['trials']}"
              if "trials" in record else "")
    line = (f"[{number}/{total}] {record['name']} beside {record['adversity']}"
            f" #{record['repeat']}.{record['copy']}: {verdict} "
            f"{record['seconds']} s{trials} load {record['load_before'][0]:.1f}"
            f"->{record['load_after'][0]:.1f}")
    if record.get("left_behind"):
        line += f" (left behind: {len(record['left_behind'])} killed)"
    if not record["holds"]:
        line += "".join(f"\n      {text}" for text in record["reason"][-4:])
    return line


# --- the record --------------------------------------------------------------

def git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def machine(load_at_start: list[float]) -> dict:
    return {"cpus": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_at_start": load_at_start,
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}


def document(args, runs: list[dict], load_at_start: list[float], seconds: float,
             interrupted: str | None = None) -> dict:
    ran = [r for r in runs if r["ran"]]
    failed = [r for r in ran if not r["holds"]]
    status = git("status", "--porcelain")
    return {
        "schema": SCHEMA,
        "measured_on": datetime.date.today().isoformat(),
        "manifest": evidence.manifest(__file__),
        "git": {"commit": git("rev-parse", "HEAD"),
                "dirty": None if status is None else bool(status)},
        "targets_sha256": {shown(t.path):
                           hashlib.sha256(t.path.read_bytes()).hexdigest()
                           for t in args.targets},
        "machine": machine(load_at_start),
        "settings": {"repeats": args.repeats, "adversities": args.adversity,
                     "cpu_hogs": args.cpu_hogs, "timeout_s": args.timeout,
                     "budget_s": args.budget, "retries": 0},
        "summary": {"ran": len(ran), "held": len(ran) - len(failed),
                    "failed": [f"{r['name']} beside {r['adversity']} "
                               f"#{r['repeat']}.{r['copy']}" for r in failed],
                    "not_run": len(runs) - len(ran), "seconds": round(seconds, 1),
                    **({"interrupted": interrupted} if interrupted else {})},
        "runs": runs,
    }


def write(path: Path, content: dict) -> None:
    """Whole or not at all: a temporary file beside it, then renamed over."""
    text = json.dumps(content, indent=1, sort_keys=True, allow_nan=False) + "\n"
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    plan = [(target, adversity, repeat) for repeat in range(1, args.repeats + 1)
            for target in args.targets for adversity in args.adversity]
    total = sum(2 if adversity == "twin" else 1 for _, adversity, _ in plan)
    print(f"stress: {len(plan)} runs ({total} processes) of {len(args.targets)} "
          f"targets beside {', '.join(args.adversity)}; record -> {args.output}",
          flush=True)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    began, load_at_start = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    runs: list[dict] = []
    interrupted = None
    try:
        with tempfile.TemporaryDirectory(prefix="crashcourse-stress-") as folder:
            for target, adversity, repeat in plan:
                if time.monotonic() - began > args.budget:
                    for copy in range(2 if adversity == "twin" else 1):
                        runs.append({"target": target.kind, "name": target.name,
                                     "adversity": adversity, "repeat": repeat,
                                     "copy": copy, "ran": False, "holds": None,
                                     "reason": ["not started: past --budget"]})
                    continue
                for record in one_run(target, adversity, repeat, Path(folder), args):
                    runs.append(record)
                    print(progress(sum(r["ran"] for r in runs), total, record),
                          flush=True)
    except (KeyboardInterrupt, SystemExit) as stop:
        interrupted = f"stopped by {type(stop).__name__} after {len(runs)} records"
    finally:
        content = document(args, runs, load_at_start, time.monotonic() - began,
                           interrupted)
        write(args.output, content)
    summary = content["summary"]
    print(f"stress: {summary['held']} of {summary['ran']} runs held, "
          f"{summary['not_run']} not run; {args.output}", flush=True)
    for name in summary["failed"]:
        print(f"  FAILED: {name}", flush=True)
    return 0 if summary["held"] == summary["ran"] and not interrupted else 1


if __name__ == "__main__":
    sys.exit(main())
