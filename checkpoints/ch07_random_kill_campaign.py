"""Chapter 07 checkpoint: kill the journal worker at random, resume, compare.

    python checkpoints/ch07_random_kill_campaign.py --output PATH \\
        [--trials N | --quick] [--seed N] [--kills K] [--jobs J] \\
        [--probe correct|filename-only]

Each trial builds a fresh world (40 scans on the drive, an empty mail
provider, the 42-step restock plan stored in the journal), starts the worker,
SIGKILLs it at a uniformly random (step, boundary) and, while it is down, lets
the supplier file its own document under the very name the interrupted step
was giving. A new process resumes; the mail provider delivers. The trial holds
when the end state equals an uninterrupted run's, the services' own records
show no action performed twice, and the journal at the kill held at most one
step in doubt, where the kill point says it should be.

With ``--probe filename-only`` the resumed run trusts any file carrying the
name, and the campaign must find the trials where that lie was believed.
``--quick`` runs 4 trials of 2 kills each (whatever ``--kills`` says).
Exit 0 only when every trial holds; 1 names the failed trials; 2: bad usage or
an existing ``--output`` (refused before anything runs).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import crashcourse
from crashcourse import evidence, experiment, journal
from crashcourse.example import restock_plan
from crashcourse.harness import Harness
from crashcourse.services import drive, mail
from crashcourse.store import opened
from crashcourse.workers.journal_worker import PROBES, build_world, paths

SCHEMA = "crashcourse.ch07.random_kill_campaign/1"
QUICK_TRIALS = 4
MAILS = 2  # the plan's irreversible steps
PLAN = restock_plan()
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
                "irreversible_not_started": list(status.irreversible_not_started),
                "resolved_by": journal.resolutions(conn, task)}


def expected_position(step: int, phase: str) -> dict:
    """Where the journal must stand after a kill at (step, phase)."""
    done = step - 1 + (phase == "after_outcome")
    doubt = int(phase in ("after_intent", "after_action"))
    return {"confirmed": done, "in_doubt": doubt}


def inject_collision(directory: str, step: int) -> dict | None:
    """The supplier files its own document under the interrupted step's name."""
    args = PLAN.steps[step - 1].args
    if "file_id" not in args:
        return None
    drive.install(paths(directory)["drive"], {f"supplier-{step:03d}": args["name"]},
                  "supplier")
    return {"name": args["name"]}


def copy_world(template: str, directory: str) -> None:
    """A trial's fresh world: copies of the template's closed SQLite files."""
    for source, target in zip(paths(template).values(), paths(directory).values(),
                              strict=True):
        shutil.copyfile(source, target)


def kill_at(harness, args, directory: str, task: str, step: int, phase: str):
    """Start (or resume) the worker, SIGKILL it at (step, phase), look around."""
    worker = harness.start(args, stop_at=f"step-{step}:{phase}")
    worker.wait_for_boundary(timeout=experiment.TIMEOUT)
    killed = worker.kill()
    at_kill = journal_view(directory, task)
    mails = len(mail.messages(paths(directory)["mail"]))
    want = expected_position(step, phase)
    unsent = len(at_kill["irreversible_not_started"])
    checks = {
        "killed_by_sigkill": killed.returncode == -9,
        "at_most_one_in_doubt": at_kill["in_doubt"] <= 1,
        "journal_where_killed": all(at_kill[k] == v for k, v in want.items()),
        # the journal's proof "not sent" must agree with the provider's rows
        "unsent_proof_agrees": mails <= MAILS - unsent,
    }
    return {"step": step, "boundary": phase, "returncode": killed.returncode,
            "journal": at_kill, "mails_at_kill": mails, "checks": checks,
            "injected": inject_collision(directory, step)}


def run_trial(number: int, points: list, probe: str, world: dict) -> dict:
    """Kill at each point in turn, resume to the end, check from durable rows."""
    with (tempfile.TemporaryDirectory() as directory,
          Harness(env={"PYTHONPATH": SRC}) as harness):
        copy_world(world["template"], directory)
        task = world["task"]
        args = [*WORKER, "--dir", directory, "--task", task, "--probe", probe]
        kills = [kill_at(harness, args, directory, task, step, phase)
                 for step, phase in points]
        resumed = harness.run(args, timeout=experiment.TIMEOUT)
        final = end_state(directory)
        after = journal_view(directory, task)
    return judge(number, kills, resumed.returncode, final, after, world["reference"])


def judge(number, kills, resumed_rc, final, after, reference) -> dict:
    """Each check as a named boolean; the trial holds when all are true."""
    checks = {name: all(k["checks"][name] for k in kills)
              for name in kills[0]["checks"]}
    checks |= {
        "resumed_exit_0": resumed_rc == 0,
        "all_confirmed": after["confirmed"] == len(PLAN.steps),
        "end_state_equal": final["state"] == reference,
        "no_duplicates": sum(final["duplicates"].values()) == 0,
    }
    differs = sorted(fid for fid, name in reference["files"].items()
                     if final["state"]["files"].get(fid) != name)
    return {"trial": number, "holds": all(checks.values()), "checks": checks,
            "kills": kills, "resumed_returncode": resumed_rc,
            "journal_after": after, "duplicates": final["duplicates"],
            "files_differing": differs}


def reference_run(template: str) -> dict:
    """The end state of one uninterrupted run, in a worker process too."""
    with (tempfile.TemporaryDirectory() as directory,
          Harness(env={"PYTHONPATH": SRC}) as harness):
        copy_world(template, directory)
        task = PLAN.task
        done = harness.run([*WORKER, "--dir", directory, "--task", task],
                           experiment.TIMEOUT)
        if done.returncode != 0:
            raise RuntimeError(f"uninterrupted run failed: {done.stderr}")
        return end_state(directory)["state"]


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


def campaign(trials: int, kills: int, seed: int, probe: str, jobs: int) -> dict:
    """Build the template world, run the reference, then every trial."""
    with tempfile.TemporaryDirectory() as template:
        world = {"template": template, "task": build_world(template, PLAN)}
        world["reference"] = reference_run(template)
        return run_trials(kill_points(trials, kills, seed), probe, jobs, world)


def run_trials(points, probe: str, jobs: int, world: dict) -> dict:
    progress = experiment.Progress(len(points))

    def one(item):
        number, kills = item
        planned = [{"step": step, "boundary": phase} for step, phase in kills]
        result = evidence.attempt({"trial": number, "planned_kills": planned},
                                  run_trial, number, kills, probe, world)
        where = ", ".join(f"step {step} {phase}" for step, phase in kills)
        return progress.report(f"trial {number} killed at {where}", result)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, enumerate(points, start=1)))
    return {"reference": world["reference"], "trials": results}


def summarize(results: list[dict]) -> dict:
    """Aggregate counts, every one summed from the per-trial records."""
    finished = [r for r in results if "error" not in r]  # the harness got through
    kills = [kill for r in finished for kill in r["kills"]]
    return {
        "trials": len(results),
        "kills": sum(kill["returncode"] == -9 for kill in kills),
        "held": sum(r["holds"] for r in results),
        "failed_trials": [r["trial"] for r in results if not r["holds"]],
        "unfinished_trials": [r["trial"] for r in results if "error" in r],
        "duplicates": sum(sum(r["duplicates"].values()) for r in finished),
        "end_state_differs": sum(not r["checks"]["end_state_equal"] for r in finished),
        "resolved_by_probe": sum(r["journal_after"]["resolved_by"]["probe"]
                                 for r in finished),
        "max_in_doubt_at_kill": max((k["journal"]["in_doubt"] for k in kills),
                                    default=None),
        "kills_by_boundary": {phase: sum(k["boundary"] == phase for k in kills)
                              for phase in journal.PHASES},
    }


def kills_per_trial(text: str) -> int:
    """The type of ``--kills``: 1 up to the plan's number of steps."""
    value = experiment.parse_count(text)
    if value > len(PLAN.steps):
        raise argparse.ArgumentTypeError(
            f"at most {len(PLAN.steps)} (one per step of the plan), got {value}")
    return value


def run(args) -> tuple[dict, list[dict], dict]:
    trials, kills = (QUICK_TRIALS, 2) if args.quick else (args.trials, args.kills)
    done = campaign(trials, kills, args.seed, args.probe, args.jobs)
    summary = summarize(done["trials"])
    for number in summary["failed_trials"]:
        bad = done["trials"][number - 1]
        failing = bad.get("error") or ", ".join(
            name for name, ok in bad["checks"].items() if not ok)
        where = ", ".join(f"step {k['step']} {k['boundary']}"
                          for k in bad.get("kills", bad.get("planned_kills")))
        print(f"FAILED trial {number} (killed at {where}): {failing}", file=sys.stderr)
    parameters = {"trials": trials, "kills": kills, "seed": args.seed,
                  "probe": args.probe, "jobs": args.jobs}
    return summary, done["trials"], {"parameters": parameters,
                                     "reference": done["reference"]}


def main(argv: list[str] | None = None) -> int:
    parser = experiment.command_line(
        __doc__, count="trials", default=200, seed=7,
        count_help="trials, each a fresh world killed at random points",
        quick_help=f"{QUICK_TRIALS} trials of 2 kills, what the test suite runs")
    parser.add_argument("--kills", type=kills_per_trial, default=1, metavar="K",
                        help="kills per trial, each later in the plan "
                        "(default: %(default)s)")
    parser.add_argument("--probe", choices=PROBES, default="correct",
                        help="how a resumed run checks a step in doubt; "
                        "filename-only is the mutant (default: %(default)s)")
    parser.add_argument("--jobs", type=experiment.parse_count, default=2,
                        metavar="J", help="trials at a time (default: %(default)s)")
    return experiment.main(argv, parser=parser, schema=SCHEMA, script=__file__,
                           run=run)


if __name__ == "__main__":
    sys.exit(main())
