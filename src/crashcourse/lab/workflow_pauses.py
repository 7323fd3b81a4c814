"""Pause campaigns for chapter 08's workflow worker (issue 29).

    python bench/bench_pauses.py --worker workflow --output FILE [--trials N]
        [--forced N] [--seed S] [--mode takeover,cancel]

``crashcourse.workers.workflow_worker`` (the real process, its own supplier
process beside it) is frozen with SIGSTOP at an instant drawn uniformly over
its measured life, as ``crashcourse.lab.pauses`` does for the journal worker:
each trial draws fractions from its own seeded stream (``pauses.fractions``),
each one a fraction of the life of an uninterrupted run made just before it
(``life_s``: its own world, the same load), and a draw counts only when the
kernel showed the worker stopped, alive; one that fell after the run's end
is recorded as missed and redrawn in a fresh world. (Lives measured once at
the start misled: on a machine whose load changes, a run took twice the
life measured at the start, and nearly every draw fell in its start-up.) ``--forced
N`` more trials freeze it at ``FORCED_AT`` (its mail attempted, not yet
admitted), held there by its boundary, then SIGSTOPped. While it is frozen:

- ``takeover``: a recovery worker runs to its end (it waits out the frozen
  attempt's lease itself, then probes and calls), then the frozen one is
  thawed and let finish;
- ``cancel``: the person cancels (``workflow.cancel``: if the frozen worker
  holds the workflow's write lock, the cancel waits 1 s, the worker is
  thawed and the cancel made again: ``stop_blocked_s``) and compensates (a
  compensation that a file locked by the frozen worker stops is recorded,
  ``compensation_blocked``); a recovery is started (it must do nothing);
  the frozen one is thawed and let finish; the person compensates again.

Effects are counted from the services' rows only (``records_per_key``: the
supplier's orders answered 201, the payment service's payments, the mail
provider's messages), never exit codes or a worker's own report. A trial
BREAKS on an effect twice under one key, an effect of a step after the
cancel (the person's own release is not the work's), or a
final report (after the last compensation) that calls a step not done while
its service holds the effect, unless the key is the step the frozen worker
had ADMITTED and not recorded (at the freeze or at the cancel): its call may
land when it thaws, and only a service that takes the token (the supplier)
refuses it. Those are counted apart (``residual``), by step.

The negative control is the same worker in its draft mode ``unleased``
(``advance_step_unleased``: versions, no lease, no admission): frozen after
its attempt it calls when it thaws whatever happened meanwhile. At the
forced instant it is caught every time: in a takeover it mails after the
recovery did, in a cancel it mails after the cancel; the real worker, frozen
at the same barrier, is refused at its admission and mails nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter

from crashcourse import workflow
from crashcourse.lab import pauses, processes
from crashcourse.lab.harness import Harness
from crashcourse.services import mail, payments
from crashcourse.store import opened, table_rows
from crashcourse.waiting import wait_until
from crashcourse.workflow import steps as workflow_steps

WORKER = "crashcourse.workers.workflow_worker"
REAL, CONTROL = "versioned", "unleased"  # the worker's --mode: real, control
MODES = ("takeover", "cancel")
FORCED_AT = "before_remote:mail"  # attempted, not admitted: the fence's barrier
PERSON = "person"
FIRST = "worker-1"
RUN_TIMEOUT_S = pauses.RUN_TIMEOUT_S


def lease_s() -> float:
    """Each attempt's lease: above a call's declared wait (the admission
    refuses a call whose wait does not fit), with a second to reach it."""
    from crashcourse.workers.workflow_worker import CALL_WAIT_S

    return CALL_WAIT_S + 1.0


class World:
    """One trial's files and supplier process (``workflow_worker.build_world``)."""

    def __init__(self, harness: Harness, directory: str):
        from crashcourse.services.supplier.process import start_supplier
        from crashcourse.workers import workflow_worker

        os.makedirs(directory, exist_ok=True)
        self.harness, self.directory = harness, directory
        built = workflow_worker.build_world(directory)
        self.id, self.paths = built["workflow_id"], built["paths"]
        self.supplier = start_supplier(harness, self.paths["supplier"])
        self.url = self.supplier.url

    def start(self, who: str, variant: str, stop_at: str | None = None):
        return self.harness.start(
            ["-m", WORKER, "--dir", self.directory, "--workflow", self.id,
             "--who", who, "--url", self.url, "--mode", variant,
             "--lease", str(lease_s())], stop_at=stop_at)

    def close(self) -> None:
        """Stop this world's supplier (a trial's last act)."""
        self.supplier.worker.kill(expect_sigkill=False)

    def rows(self) -> dict:
        """The services' rows and the worker's steps, each a read."""
        with opened(self.paths["supplier"], busy_timeout_ms=pauses.READ_MS) as conn:
            supplier = {t: table_rows(conn, t) for t in ("orders", "requests")}
        return {"supplier": supplier,
                "payments": payments.snapshot(self.paths["payments"])["payments"],
                "mail": mail.messages(self.paths["mail"])}

    def steps(self) -> dict:
        with opened(self.paths["workflow"], busy_timeout_ms=pauses.READ_MS) as conn:
            return {"workflow": workflow.current(workflow.read(conn, self.id)),
                    "steps": workflow_steps.progress(conn, self.id)}

    def cancel(self, timeout_ms: int) -> int:
        with opened(self.paths["workflow"], busy_timeout_ms=timeout_ms) as conn:
            seen = workflow.read(conn, self.id)["version"]
            return workflow.cancel(conn, self.id, expected_version=seen, who=PERSON)

    def compensate(self) -> dict:
        from crashcourse.workers import workflow_worker

        remotes = workflow_worker.restock_remotes(self.paths, self.url)
        with opened(self.paths["workflow"]) as conn:
            return workflow_steps.compensate(conn, self.id, remotes, who=PERSON)


def records_per_key(rows: dict) -> dict[str, int]:
    """Operation key -> effects the services hold under it: the supplier's
    POSTs answered 201 (an order; a release has its own key), payments,
    messages (the mail provider keeps one row per message, key or not)."""
    ops = Counter(r["operation_key"] for r in rows["supplier"]["requests"]
                  if r["method"] == "POST" and r["answer"] == 201)
    ops.update(p["key"] for p in rows["payments"])
    ops.update(m["operation_key"] for m in rows["mail"])
    return dict(sorted(ops.items()))


def freeze(worker, instant: float | None) -> dict:
    """SIGSTOP ``worker`` (``instant`` s after its start, or now), then wait
    until the kernel shows it stopped or ended: ``landed`` only when it
    showed stopped. Measured, never assumed."""
    started = worker.started
    if instant is not None:
        try:
            worker.process.wait(timeout=max(0.0, started + instant - time.monotonic()))
            return {"landed": False, "why": "ended before the instant",
                    "ended_by_s": round(time.monotonic() - started, 4)}
        except subprocess.TimeoutExpired:  # it runs at the instant
            pass
    signalled = round(time.monotonic() - started, 4)
    if worker.process.poll() is not None:
        return {"landed": False, "why": "ended before the instant",
                "ended_by_s": signalled}
    os.killpg(worker.pid, signal.SIGSTOP)
    settled = (*processes.STOPPED, "Z", None)
    wait_until(lambda: processes.state(worker.pid) in settled,
               RUN_TIMEOUT_S, interval=processes.POLL,
               what="the signalled worker stopped, or ended")
    state = processes.state(worker.pid)
    landed = state in processes.STOPPED
    return {"landed": landed, "kernel_state": state, "signalled_s": signalled,
            "stopped_seen_s": round(time.monotonic() - started, 4),
            **({} if landed else {"why": "ended before the stop took"})}


def measure_life(harness: Harness, folder: str, variant: str) -> float:
    """One uninterrupted run in a fresh world, start to exit, s."""
    world = World(harness, folder)
    try:
        worker = world.start(FIRST, variant)
        worker.finish(RUN_TIMEOUT_S)
        return round(time.monotonic() - worker.started, 4)
    finally:
        world.close()


def where_frozen(world: World) -> dict:
    """Where the frozen worker is, from the rows: the workflow's state, each
    step's status and whether its attempt by ``FIRST`` was admitted, the
    effects already held, whose write lock it holds, and the ``phase``:
    ``before_run`` (nothing written by it), ``attempted:<step>`` (its
    attempt row, not admitted), ``admitted:<step>`` (admitted, no outcome:
    the residual window), ``between_steps`` or ``after_work``."""
    seen = pauses.while_frozen(world.steps)
    locks = sorted(name for name, path in world.paths.items()
                   if name != "supplier" and pauses.write_locked(path))
    held = pauses.while_frozen(world.rows)
    found = {"locks_held": locks,
             "effects_at_freeze": held if held == pauses.LOCKED
             else records_per_key(held)}
    if seen == pauses.LOCKED:
        return {**found, "phase": "opening", "admitted_at_freeze": []}
    admitted = admitted_by_first(seen["steps"])
    doubt = [s["step"] for s in seen["steps"] if s["status"] == workflow_steps.IN_DOUBT]
    state = seen["workflow"]["state"]
    if state == workflow.PENDING:
        phase = "before_run"
    elif state != workflow.RUNNING:
        phase = "after_work"
    elif admitted:
        phase = f"admitted:{admitted[0]['step']}"
    elif doubt:
        phase = f"attempted:{doubt[0]}"
    else:
        phase = "between_steps"
    return {**found, "phase": phase, "workflow_at_freeze": seen["workflow"],
            "admitted_at_freeze": admitted}


def admitted_by_first(steps: list[dict]) -> list[dict]:
    """Steps in doubt whose attempt by ``FIRST`` was admitted: its call may
    still land (the residual window)."""
    return [{"step": s["step"], "operation_key": s["operation_key"]}
            for s in steps if s["status"] == workflow_steps.IN_DOUBT
            and any(a["who"] == FIRST and a["admitted_at"] is not None
                    for a in s["attempts"])]


def trial(harness: Harness, folder: str, number: int, mode: str, variant: str,
          fractions, stop_at: str | None = None) -> dict:
    """One pause of ``FIRST``, at a drawn fraction of the life of a run made
    just before (redrawn in a fresh world while it did not land, up to
    ``pauses.MAX_DRAWS``) or held at ``stop_at`` and frozen there; then the
    mode's act; judged."""
    seen: dict = {"worker": f"{WORKER} --mode {variant}", "variant": variant,
                  "trial": number, "mode": mode, "forced": stop_at, "draws": []}
    for k in range(1 if stop_at else pauses.MAX_DRAWS):
        here = os.path.join(folder, f"{mode}-{number}-{k}")
        life = None if stop_at else measure_life(harness, f"{here}-life", variant)
        world = World(harness, here)
        first = None
        try:
            first = world.start(FIRST, variant, stop_at)
            if stop_at:
                first.wait_for_boundary(RUN_TIMEOUT_S)
                froze = {"boundary": stop_at, **freeze(first, None)}
                first.release()  # read once it runs again
            else:
                fraction = fractions.random()
                froze = {"fraction": round(fraction, 6), "life_s": life,
                         "planned_s": round(fraction * life, 4),
                         **freeze(first, fraction * life)}
            seen["draws"].append(froze)
            if froze["landed"]:
                return frozen_trial(seen, world, first, mode, variant, froze)
            first.finish(RUN_TIMEOUT_S)
        finally:
            if first is not None and first.process.poll() is None:
                first.thaw()
                first.kill(expect_sigkill=False)
            world.close()
    seen.update(paused=False)
    return seen


def frozen_trial(seen: dict, world: World, first, mode: str, variant: str,
                 froze: dict) -> dict:
    """``FIRST`` is frozen (the kernel said so): the mode's act, thawed,
    every worker ended, the rows judged."""
    seen.update(paused=True, planned_s=froze.get("planned_s"),
                at_s=froze["stopped_seen_s"], **where_frozen(world))
    at_cancel, residual = None, list(seen["admitted_at_freeze"])
    thawed = False
    try:
        if mode == "cancel":
            seen["stop_blocked_s"], thawed, seen["cancel_refused"] = stop(world, first)
        if mode == "cancel" and seen["cancel_refused"] is None:
            rows = pauses.while_frozen(world.rows)
            at_cancel = None if rows == pauses.LOCKED else records_per_key(rows)
            seen["effects_at_cancel"] = at_cancel
            now = pauses.while_frozen(world.steps)
            if now != pauses.LOCKED:
                residual += admitted_by_first(now["steps"])
            seen["compensated_while_frozen"] = compensate_while_frozen(world)
        recovery = world.start("recovery", variant)
        seen["recovery_exit"] = recovery.finish(RUN_TIMEOUT_S).returncode
        first.thaw()
        seen["first_exit"] = first.finish(RUN_TIMEOUT_S).returncode
        if mode == "cancel" and seen["cancel_refused"] is None:
            seen["final_report"] = report_of(world.compensate())
        seen["thawed_for_the_cancel"] = thawed
        return judge(seen, world, at_cancel, residual)
    finally:
        if first.process.poll() is None:
            first.thaw()


def stop(world: World, first) -> tuple[float | None, bool, str | None]:
    """The person's cancel; if the frozen worker holds the workflow's write
    lock, it waits 1 s and fails: thaw it and cancel again (what the person
    must do). How long it could not (None: at once), whether it thawed, and
    why the cancel was refused (None: it committed): a workflow that is
    final already (its work done) cannot be cancelled."""
    from sqlite3 import OperationalError

    began = time.monotonic()
    try:
        world.cancel(1000)
        return None, False, None
    except workflow.TransitionRefused as final:
        return None, False, str(final)
    except OperationalError as locked:
        if not pauses.held_out(locked):
            raise
    first.thaw()
    try:
        world.cancel(int(RUN_TIMEOUT_S * 1000))
    except workflow.TransitionRefused as final:  # it finished first
        return round(time.monotonic() - began, 4), True, str(final)
    return round(time.monotonic() - began, 4), True, None


def compensate_while_frozen(world: World) -> dict | str:
    """The person's compensation while worker-1 is frozen; ``pauses.LOCKED``
    when a file it must read stays locked by the frozen worker (one frozen
    in its first open of the payment service's file holds the file's WAL
    index, and every reader waits): the person can only wait, or thaw it."""
    from sqlite3 import OperationalError

    try:
        return report_of(world.compensate())
    except OperationalError as locked:
        if not pauses.held_out(locked):
            raise
        return pauses.LOCKED


def report_of(report: dict) -> dict:
    return {k: report[k] for k in ("state", "completed", "undone", "needs_person",
                                   "cannot_undo", "in_doubt", "not_done")}


def judge(seen: dict, world: World, at_cancel: dict | None,
          residual: list[dict]) -> dict:
    """Count from the rows: effects twice, after the cancel, and a final
    report that calls a step not done while its service holds the effect;
    split into ``residual`` (the keys the frozen worker had admitted) and
    ``breaks``."""
    now = records_per_key(world.rows())
    state = world.steps()
    keys = {s["step"]: s["operation_key"] for s in state["steps"]}
    allowed = {r["operation_key"] for r in residual}
    found = [("twice", k) for k, n in now.items() if n > 1]
    if at_cancel is not None and state["workflow"]["state"] == workflow.CANCELLED:
        found += [("after_cancel", k) for k, n in now.items()  # the work's
                  if k in keys.values() and n > at_cancel.get(k, 0)]  # not the undo
    report = seen.get("final_report")
    if report:
        found += [("report_false", keys[step]) for step in report["not_done"]
                  if now.get(keys[step], 0) > 0]
    step_of = {key: step for step, key in keys.items()}
    named = [[why, step_of.get(k, "release"), k] for why, k in found]
    seen.update(effects=now, workflow_final=state["workflow"],
                residual=[n for n in named if n[2] in allowed],
                breaks=[n for n in named if n[2] not in allowed])
    seen["holds"] = not seen["breaks"]
    return seen


def campaign(trials: int, seed: int, modes: tuple[str, ...], forced: int,
             folder: str) -> dict:
    """Per mode the drawn trials and the forced ones: the real worker, then
    the control, at the same fractions (each of its own run's life)."""
    runs = {}
    with Harness() as harness:
        for name, variant in (("real", REAL), ("control", CONTROL)):
            results = []
            where = os.path.join(folder, name)
            for mode in modes:
                results += [trial(harness, where, n, mode, variant,
                                  pauses.fractions(seed, f"workflow:{mode}", n))
                            for n in range(1, trials + 1)]
                results += [trial(harness, where, trials + n, mode, variant, None,
                                  stop_at=FORCED_AT)
                            for n in range(1, forced + 1)]
            runs[name] = {"worker": f"{WORKER} --mode {variant}", "results": results,
                          "summary": summarize(results, modes)}
    return {"seed": seed, "trials": trials, "forced": forced, "modes": list(modes),
            "lease_s": lease_s(), "forced_at": FORCED_AT, **runs}


def summarize(results: list[dict], modes: tuple[str, ...]) -> dict:
    out = {}
    for mode in modes:
        mine = [r for r in results if r["mode"] == mode]
        drawn = [r for r in mine if not r["forced"]]
        draws = [d for r in drawn for d in r["draws"]]
        out[mode] = {**counts(drawn), "drawn": len(draws),
                     "landed": sum(d["landed"] for d in draws),
                     "missed": sum(not d["landed"] for d in draws),
                     "never_landed": [r["trial"] for r in drawn if not r["paused"]],
                     "phases": dict(sorted(Counter(
                         r["phase"] for r in drawn if r["paused"]).items())),
                     "inside_a_lock": sum(bool(r.get("locks_held")) for r in drawn),
                     "forced": counts([r for r in mine if r["forced"]])}
    return out


def counts(mine: list[dict]) -> dict:
    judged = [r for r in mine if r["paused"]]
    by_step = Counter(b[1] for r in judged for b in r["residual"])
    return {"trials": len(mine), "paused": len(judged),
            "held": sum(r["holds"] for r in judged),
            "breaks": sum(len(r["breaks"]) for r in judged),
            "trials_broken": [r["trial"] for r in judged if r["breaks"]],
            "residual": sum(len(r["residual"]) for r in judged),
            "residual_by_step": dict(sorted(by_step.items())),
            "trials_residual": [r["trial"] for r in judged if r["residual"]],
            "stop_blocked": sum(r.get("stop_blocked_s") is not None for r in judged),
            "compensation_blocked": sum(
                r.get("compensated_while_frozen") == pauses.LOCKED for r in judged)}


def verdict(real: dict, control: dict) -> dict:
    everyone = [*real.values(), *control.values()]
    return {"real_holds": all(m["breaks"] == 0 and m["forced"]["breaks"] == 0
                              for m in real.values()),
            "every_trial_froze": all(not m["never_landed"] for m in everyone),
            "control_caught": any(m["breaks"] or m["forced"]["breaks"]
                                  for m in control.values()),
            "control_caught_at_every_forced": all(
                len(m["forced"]["trials_broken"]) == m["forced"]["trials"]
                for m in control.values())}


def main(argv: list[str] | None = None, script=None) -> int:
    """The command line (``bench/bench_pauses.py --worker workflow``): both
    variants at the same fractions and the forced instant, one evidence
    file. Exit 0 when the real worker never breaks, every drawn trial froze
    a live worker, and the control breaks at every forced trial; 1
    otherwise; 2 for bad usage or an existing ``--output``."""
    import shutil
    import sys
    import tempfile
    from pathlib import Path

    from crashcourse.lab import evidence
    from crashcourse.validate import argument_parser, check_number

    parser = argument_parser("pause campaigns of the workflow worker (issue 29)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--trials", default="30")
    parser.add_argument("--forced", default="3")
    parser.add_argument("--seed", default="2026")
    parser.add_argument("--mode", default="all",
                        help=f"all, or some of {', '.join(MODES)}, by commas")
    args = parser.parse_args(argv)
    try:
        trials = int(check_number("--trials", args.trials, 1, 200))
        forced = int(check_number("--forced", args.forced, 0, 50))
        seed = int(check_number("--seed", args.seed, 0, 2**31))
        modes = MODES if args.mode == "all" else tuple(args.mode.split(","))
        if not modes or not set(modes) <= set(MODES) or len(set(modes)) < len(modes):
            raise ValueError(f"--mode must be all or some of {MODES}, by commas")
    except ValueError as bad:
        print(f"workflow pauses: {bad}", file=sys.stderr)
        return 2
    if evidence.refused_output(args.output):
        return 2
    before = pauses.load()
    folder = tempfile.mkdtemp(prefix="crashcourse-workflow-pauses-")
    try:
        done = campaign(trials, seed, modes, forced, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    real, control = done["real"], done["control"]
    summary = {"real": real["summary"], "control": control["summary"],
               **verdict(real["summary"], control["summary"]),
               "forced_at": FORCED_AT, "seed": seed, "load_before": before,
               "load_after": pauses.load(), "cpus": os.cpu_count()}
    script = Path(script or __file__)
    evidence.record(args.output, "crashcourse.workflow_pause_campaign/1", script,
                    summary, [*real["results"], *control["results"]],
                    argv=[script.name, *(sys.argv[1:] if argv is None else argv)],
                    parameters={k: done[k] for k in (
                        "seed", "trials", "forced", "modes", "lease_s",
                        "forced_at")},
                    workers={"real": real["worker"], "control": control["worker"]},
                    sources_used=evidence.sources_used(script))
    for name, run in (("real", real), ("control", control)):
        for mode, s in run["summary"].items():
            f = s["forced"]
            print(f"workflow {name} {mode}: {s['held']}/{s['paused']} held, breaks"
                  f" {s['breaks']}, residual {s['residual_by_step']}, landed"
                  f" {s['landed']}/{s['drawn']} draws; forced {f['held']}/"
                  f"{f['trials']} held, breaks {f['breaks']}", file=sys.stderr)
    ok = summary["real_holds"] and summary["every_trial_froze"]
    return 0 if ok and summary["control_caught_at_every_forced"] else 1
