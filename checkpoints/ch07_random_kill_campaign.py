"""Chapter 07 checkpoint: kill the journal worker at random, resume, compare.

    python checkpoints/ch07_random_kill_campaign.py --output PATH \\
        [--trials N | --quick] [--seed N] [--kills K] [--jobs J] \\
        [--kill-at boundary|instant] [--probe correct|filename-only]

Each trial copies a fresh world (40 scans on the drive, an empty mail
provider, the 43-step restock plan stored in the journal: 40 renames, the
gate ``verify_drive`` at step 41, two mails) and starts the worker.
``--kill-at`` says where it dies:

boundary  (the default) at a uniformly random (step, boundary): the worker
          holds at ``step-N:PHASE`` and is SIGKILLed there. Each further kill
          of ``--kills`` is later in the plan.
instant   at a uniformly random INSTANT, wherever the worker is: starting up,
          inside a SQLite transaction, between two lines. A timer runs from
          the moment the process was started; no boundary is involved. The
          instant is u x SPAN: u is uniform in [0, 1) and drawn from
          ``--seed``; SPAN is the longest of three uninterrupted runs, each
          timed from its start to its exit, ``--jobs`` at a time, just before
          the trials. Each kill records u, the span, the instant and where the
          journal stood. Every resumed run draws a new instant; a run that
          ends before its instant is recorded as such, and then nothing is
          left to kill.

While the worker is down, the supplier files its own document under the name
the interrupted step gives (after an instant: the step in doubt, or else the
first step not started). The gate then finds that the plan no longer fits the
drive and ends the run, exit 3, before any mail. The campaign does what the
person of chapter 09 would: it gives the supplier's document a name of its
own and starts the run again. A last process finishes the plan; the mail
provider delivers.

A trial holds when the end state equals an uninterrupted run's, the services'
own records show no action performed twice, every kill left at most one step
in doubt (the last row) and no mail that the journal proves unsent, a
boundary kill left the journal where its point says, and every gate refusal
found a supplier document under a planned name and left no row for the gate.

With ``--probe filename-only`` the resumed run trusts any file carrying the
name, and the campaign must find the trials where that lie was believed.
``--quick`` runs 4 trials of 2 kills each (whatever ``--kills`` says).
Exit 0 only when every trial holds; 1 names the failed trials; 2: bad usage or
an ``--output`` that exists or cannot be written (refused before anything
runs).
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import crashcourse
from crashcourse import evidence, experiment, journal
from crashcourse.example import restock_plan
from crashcourse.harness import BoundaryNotReached, Harness
from crashcourse.services import drive, mail
from crashcourse.store import opened
from crashcourse.workers.journal_worker import PROBES, REFUSED, build_world, paths

SCHEMA = "crashcourse.ch07.random_kill_campaign/2"
QUICK_TRIALS = 4
KILL_AT = ("boundary", "instant")
PLAN = restock_plan()
GATE = next(step.number for step in PLAN.steps if step.gate)
MAILS = sum(step.irreversible for step in PLAN.steps)
PLANNED_NAMES = {s.args["name"] for s in PLAN.steps if s.action == "rename"}
SPAN_RUNS = 3  # uninterrupted runs timed for --kill-at instant: the longest is SPAN
# Where the journal stood at a kill, read from its rows (the chapter's figure).
STOOD = ("no row yet", "a step in doubt", "between steps", "every step confirmed")
SRC = str(Path(crashcourse.__file__).resolve().parent.parent)
# -S skips site-packages: the worker needs only the stdlib and src/ (PYTHONPATH)
WORKER = ["-S", "-m", "crashcourse.workers.journal_worker"]


def end_state(directory: str) -> dict:
    """The shop's files and the provider's messages, read from their files."""
    where = paths(directory)
    mail.tick(where["mail"])  # the provider's later delivery
    messages = [[m["recipient"], m["subject"], m["operation_key"], m["status"]]
                for m in mail.messages(where["mail"])]
    state = {"files": drive.names(where["drive"], owner="shop"), "messages": messages}
    return {"state": state,
            "duplicates": {"renames": drive.duplicate_requests(where["drive"]),
                           "mails": mail.duplicate_messages(where["mail"])}}


def journal_view(directory: str, task: str) -> dict:
    """What the journal says, counted from its rows."""
    with opened(paths(directory)["journal"]) as conn:
        status = journal.journal_status(conn, task, PLAN)
        return {**status.summary(), "last_row": status.last_row,
                "in_doubt_steps": [n for n, state in enumerate(status.states, 1)
                                   if state == "in_doubt"],
                "irreversible_not_started": list(status.irreversible_not_started),
                "resolved_by": journal.resolutions(conn, task)}


def where_it_stood(view: dict) -> str:
    """One of ``STOOD``: where a kill left the journal."""
    if view["in_doubt"]:
        return "a step in doubt"
    if view["last_row"] == 0:
        return "no row yet"
    return "every step confirmed" if view["last_row"] == len(PLAN.steps) \
        else "between steps"


def expected_position(step: int, phase: str) -> dict:
    """Where the journal must stand after a kill at (step, phase).

    One commit per step: a step's outcome is written with the next step's
    intent, so from ``after_intent`` on the step is the one in doubt, and at
    ``before_intent`` the previous step is (unless nothing was held: the
    first step a process runs; ``at_most_one_in_doubt`` checks the rest)."""
    if phase == "before_intent":
        return {"last_row": step - 1}
    return {"confirmed": step - 1, "in_doubt": 1}


def inject_collision(directory: str, step: int | None) -> dict | None:
    """The supplier files its own document under the interrupted step's name
    (again, when two instants interrupted the same step)."""
    args = PLAN.steps[step - 1].args if step else {}
    if "file_id" not in args:
        return None
    path, document = paths(directory)["drive"], f"supplier-{step:03d}"
    if document in drive.names(path, owner="supplier"):
        drive.rename_to(path, document, args["name"], requester="supplier")
    else:
        drive.install(path, {document: args["name"]}, "supplier")
    return {"step": step, "name": args["name"]}


def gate_refusal(directory: str, task: str) -> dict:
    """After the gate refused: what the rows show, then the person's answer.

    Each supplier document holding a name the plan gives is renamed to a name
    of its own (by the supplier, so the assistant's request log is untouched)."""
    where = paths(directory)
    found = {file_id: name for file_id, name
             in drive.names(where["drive"], owner="supplier").items()
             if name in PLANNED_NAMES}
    view = journal_view(directory, task)
    for file_id in found:
        drive.rename_to(where["drive"], file_id, f"{file_id}.pdf", requester="supplier")
    return {"supplier_documents": found, "journal": view}


def answered(launch, directory: str, task: str) -> tuple:
    """``launch()``; after a gate refusal, the person's answer and one more
    ``launch()``. Returns its result and the refusals (at most two)."""
    result, refused = launch()
    if not refused:
        return result, []
    refusals = [gate_refusal(directory, task)]
    result, refused = launch()
    if refused:  # moving the documents did not help: recorded, and judged
        refusals.append(gate_refusal(directory, task))
    return result, refusals


def look_around(directory: str, task: str, returncode: int) -> dict:
    """What a kill left: the journal, the provider's messages, the checks."""
    at_kill = journal_view(directory, task)
    mails = len(mail.messages(paths(directory)["mail"]))
    unsent = len(at_kill["irreversible_not_started"])
    return {"returncode": returncode, "journal": at_kill,
            "journal_stood": where_it_stood(at_kill), "mails_at_kill": mails,
            "checks": {
                "at_most_one_in_doubt": at_kill["in_doubt"] <= 1,
                "in_doubt_only_at_the_last_row":
                    at_kill["in_doubt_steps"] in ([], [at_kill["last_row"]]),
                # the journal's proof "not sent" must agree with the provider's rows
                "unsent_proof_agrees": mails <= MAILS - unsent,
            }}


def kill_at_boundary(harness, args, directory: str, task: str, step: int,
                     phase: str) -> dict:
    """Start (or resume) the worker, SIGKILL it at (step, phase), look around."""
    def launch():
        worker = harness.start(args, stop_at=f"step-{step}:{phase}")
        try:
            worker.wait_for_boundary(timeout=experiment.TIMEOUT)
        except BoundaryNotReached:
            if worker.process.returncode != REFUSED:
                raise
            return None, True  # the gate refused on the way to the boundary
        return worker, False

    worker, refusals = answered(launch, directory, task)
    if worker is None:
        raise BoundaryNotReached(f"the gate refused twice before step-{step}:{phase}")
    killed = worker.kill()
    seen = look_around(directory, task, killed.returncode)
    want = expected_position(step, phase)
    seen["checks"] |= {
        "killed_by_sigkill": killed.returncode == -9,
        "journal_where_killed": all(seen["journal"][k] == v for k, v in want.items()),
    }
    return {"step": step, "boundary": phase, **seen, "gate_refusals": refusals,
            "injected": inject_collision(directory, step)}


def kill_at_instant(harness, args, directory: str, task: str, fraction: float,
                    span: float) -> dict:
    """Start (or resume) the worker and SIGKILL its group ``fraction * span``
    seconds after it was started, wherever it is, unless it ended first."""
    planned = fraction * span

    def launch():
        worker = harness.start(args)
        try:
            worker.process.wait(
                timeout=max(0.0, worker.started + planned - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass  # still running at the instant: the usual case
        at = time.monotonic() - worker.started
        finished = worker.kill(expect_sigkill=False)  # SIGKILL unless it ended
        return (finished, at), finished.returncode == REFUSED

    (finished, at), refusals = answered(launch, directory, task)
    seen = look_around(directory, task, finished.returncode)
    done = seen["journal"]["confirmed"] == len(PLAN.steps)
    seen["checks"]["killed_or_ran_to_the_end"] = (
        finished.returncode == -9 or (finished.returncode == 0 and done))
    doubt, last = seen["journal"]["in_doubt_steps"], seen["journal"]["last_row"]
    step = doubt[0] if doubt else last + 1 if last < len(PLAN.steps) else None
    injected = inject_collision(directory, step) if finished.returncode == -9 else None
    return {"fraction": round(fraction, 6), "span_s": round(span, 4),
            "planned_s": round(planned, 4), "at_s": round(at, 4),
            "interrupted_step": step if finished.returncode == -9 else None,
            **seen, "gate_refusals": refusals, "injected": injected}


def copy_world(template: str, directory: str) -> None:
    """A trial's fresh world: copies of the template's closed SQLite files."""
    for source, target in zip(paths(template).values(), paths(directory).values(),
                              strict=True):
        shutil.copyfile(source, target)


def run_trial(number: int, points: list, probe: str, world: dict) -> dict:
    """Kill at each point in turn, resume to the end, check from durable rows."""
    with (tempfile.TemporaryDirectory() as directory,
          Harness(env={"PYTHONPATH": SRC}) as harness):
        copy_world(world["template"], directory)
        task = world["task"]
        args = [*WORKER, "--dir", directory, "--task", task, "--probe", probe]
        kills = []
        for point in points:
            if world["kill_at"] == "boundary":
                kills.append(kill_at_boundary(harness, args, directory, task, *point))
                continue
            kills.append(kill_at_instant(harness, args, directory, task, point,
                                         world["span_s"]))
            if kills[-1]["returncode"] != -9:
                break  # the run ended before its instant: nothing is left to kill

        def finish():
            done = harness.run(args, timeout=experiment.TIMEOUT)
            return done, done.returncode == REFUSED

        resumed, refusals = answered(finish, directory, task)
        final = end_state(directory)
        after = journal_view(directory, task)
    return judge(number, kills, resumed.returncode, refusals, final, after,
                 world["reference"])


def judge(number, kills, resumed_rc, refusals, final, after, reference) -> dict:
    """Each check as a named boolean; the trial holds when all are true."""
    checks = {name: all(k["checks"][name] for k in kills)
              for name in kills[0]["checks"]}
    every_refusal = [r for k in kills for r in k["gate_refusals"]] + refusals
    checks |= {
        "resumed_exit_0": resumed_rc == 0,
        "all_confirmed": after["confirmed"] == len(PLAN.steps),
        "end_state_equal": final["state"] == reference,
        "no_duplicates": sum(final["duplicates"].values()) == 0,
        "gate_refused_only_over_a_collision": all(
            r["supplier_documents"] and r["journal"]["last_row"] < GATE
            for r in every_refusal),
    }
    differs = sorted(fid for fid, name in reference["files"].items()
                     if final["state"]["files"].get(fid) != name)
    return {"trial": number, "holds": all(checks.values()), "checks": checks,
            "kills": kills, "resume_gate_refusals": refusals,
            "resumed_returncode": resumed_rc, "journal_after": after,
            "duplicates": final["duplicates"], "files_differing": differs}


def uninterrupted_run(template: str) -> dict:
    """One run with no kill, in a worker process too: its end state, and how
    long it lived from the moment it was started to its exit."""
    with (tempfile.TemporaryDirectory() as directory,
          Harness(env={"PYTHONPATH": SRC}) as harness):
        copy_world(template, directory)
        worker = harness.start([*WORKER, "--dir", directory, "--task", PLAN.task])
        worker.process.wait(timeout=experiment.TIMEOUT)
        lived = time.monotonic() - worker.started
        done = worker.finish(experiment.TIMEOUT)
        if done.returncode != 0:
            raise RuntimeError(f"uninterrupted run failed: {done.stderr}")
        return {"state": end_state(directory)["state"], "lived_s": round(lived, 4)}


def kill_points(trials: int, kills: int, seed: int) -> list[list[tuple[int, str]]]:
    """Per trial, ``kills`` (step, boundary) pairs, fixed by ``seed``.

    Steps are drawn uniformly without replacement and visited in order (each
    resumed run is killed again later in the plan); each boundary is uniform.
    """
    rng = random.Random(seed)
    numbers = range(1, len(PLAN.steps) + 1)
    return [[(step, rng.choice(journal.PHASES))
             for step in sorted(rng.sample(numbers, kills))]
            for _ in range(trials)]


def instant_fractions(trials: int, kills: int, seed: int) -> list[list[float]]:
    """Per trial, ``kills`` fractions u, uniform in [0, 1), fixed by ``seed``:
    the n-th run of a trial is killed u x SPAN seconds after its start."""
    rng = random.Random(seed)
    return [[rng.random() for _ in range(kills)] for _ in range(trials)]


def campaign(trials: int, kills: int, seed: int, probe: str, jobs: int,
             kill_at: str = "boundary") -> dict:
    """Build the template world, time the uninterrupted runs, run every trial."""
    with tempfile.TemporaryDirectory() as template:
        world = {"template": template, "task": build_world(template, PLAN),
                 "kill_at": kill_at}
        runs = SPAN_RUNS if kill_at == "instant" else 1
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            timed = list(pool.map(uninterrupted_run, [template] * runs))
        world["reference"] = timed[0]["state"]
        if any(t["state"] != world["reference"] for t in timed):
            raise RuntimeError("two uninterrupted runs ended in different states")
        if kill_at == "boundary":
            points = kill_points(trials, kills, seed)
        else:
            world["span_s"] = max(t["lived_s"] for t in timed)
            points = instant_fractions(trials, kills, seed)
        done = run_trials(points, probe, jobs, world)
    return {**done, "uninterrupted_s": [t["lived_s"] for t in timed],
            "span_s": world.get("span_s")}


def planned_kill(point, world: dict) -> dict:
    """A kill point as the evidence states it, before it is tried."""
    if world["kill_at"] == "boundary":
        return {"step": point[0], "boundary": point[1]}
    return {"fraction": round(point, 6), "planned_s": round(point * world["span_s"], 4)}


def where(kill: dict) -> str:
    """A kill point in words, for the progress lines."""
    if "boundary" in kill:
        return f"step {kill['step']} {kill['boundary']}"
    return f"{kill['planned_s']:.3f} s"


def run_trials(points, probe: str, jobs: int, world: dict) -> dict:
    progress = experiment.Progress(len(points))

    def one(item):
        number, kills = item
        plan = [planned_kill(point, world) for point in kills]
        result = evidence.attempt({"trial": number, "planned_kills": plan},
                                  run_trial, number, kills, probe, world)
        said = ", ".join(where(kill) for kill in plan)
        return progress.report(f"trial {number} killed at {said}", result)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, enumerate(points, start=1)))
    return {"reference": world["reference"], "trials": results}


def summarize(results: list[dict], kill_at: str = "boundary") -> dict:
    """Aggregate counts, every one summed from the per-trial records."""
    finished = [r for r in results if "error" not in r]  # the harness got through
    tried = [kill for r in finished for kill in r["kills"]]
    kills = [kill for kill in tried if kill["returncode"] == -9]
    summary = {
        "kill_at": kill_at,
        "trials": len(results),
        "kill_attempts": len(tried),
        "kills": len(kills),
        "ran_to_the_end": sum(kill["returncode"] == 0 for kill in tried),
        "held": sum(r["holds"] for r in results),
        "failed_trials": [r["trial"] for r in results if not r["holds"]],
        "unfinished_trials": [r["trial"] for r in results if "error" in r],
        "duplicates": sum(sum(r["duplicates"].values()) for r in finished),
        "end_state_differs": sum(not r["checks"]["end_state_equal"] for r in finished),
        "resolved_by_probe": sum(r["journal_after"]["resolved_by"]["probe"]
                                 for r in finished),
        "gate_refusals": sum(len(k["gate_refusals"]) for k in tried)
        + sum(len(r["resume_gate_refusals"]) for r in finished),
        "max_in_doubt_at_kill": max((k["journal"]["in_doubt"] for k in kills),
                                    default=None),
        "kills_by_journal_state": {state: sum(k["journal_stood"] == state
                                              for k in kills) for state in STOOD},
    }
    if kill_at == "boundary":
        summary["kills_by_boundary"] = {
            phase: sum(k["boundary"] == phase for k in kills)
            for phase in journal.PHASES}
    return summary


def kills_per_trial(text: str) -> int:
    """The type of ``--kills``: 1 up to the plan's number of steps."""
    value = experiment.parse_count(text)
    if value > len(PLAN.steps):
        raise argparse.ArgumentTypeError(
            f"at most {len(PLAN.steps)} (one per step of the plan), got {value}")
    return value


def run(args) -> tuple[dict, list[dict], dict]:
    trials, kills = (QUICK_TRIALS, 2) if args.quick else (args.trials, args.kills)
    done = campaign(trials, kills, args.seed, args.probe, args.jobs, args.kill_at)
    summary = summarize(done["trials"], args.kill_at)
    if args.kill_at == "instant":
        summary |= {"span_s": done["span_s"],
                    "uninterrupted_s": done["uninterrupted_s"]}
    for number in summary["failed_trials"]:
        bad = done["trials"][number - 1]
        failing = bad.get("error") or ", ".join(
            name for name, ok in bad["checks"].items() if not ok)
        said = ", ".join(where(k) for k in bad.get("kills", bad.get("planned_kills")))
        print(f"FAILED trial {number} (killed at {said}): {failing}", file=sys.stderr)
    parameters = {"trials": trials, "kills": kills, "seed": args.seed,
                  "kill_at": args.kill_at, "probe": args.probe, "jobs": args.jobs}
    return summary, done["trials"], {"parameters": parameters,
                                     "reference": done["reference"]}


def main(argv: list[str] | None = None) -> int:
    parser = experiment.command_line(
        __doc__, count="trials", default=200, seed=7,
        count_help="trials, each a fresh world killed at random points",
        quick_help=f"{QUICK_TRIALS} trials of 2 kills, what the test suite runs")
    parser.add_argument("--kills", type=kills_per_trial, default=1, metavar="K",
                        help="kills per trial, each in a later run "
                        "(default: %(default)s)")
    parser.add_argument("--kill-at", choices=KILL_AT, default="boundary",
                        help="boundary: at a random step's boundary; instant: at a "
                        "random instant of the run (default: %(default)s)")
    parser.add_argument("--probe", choices=PROBES, default="correct",
                        help="how a resumed run checks a step in doubt; "
                        "filename-only is the mutant (default: %(default)s)")
    parser.add_argument("--jobs", type=experiment.parse_count, default=2,
                        metavar="J", help="trials at a time (default: %(default)s)")
    return experiment.main(argv, parser=parser, schema=SCHEMA, script=__file__,
                           run=run)


if __name__ == "__main__":
    sys.exit(main())
