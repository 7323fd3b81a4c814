"""Chapter 07 checkpoint: kill the journal worker at random, resume, compare.

    python checkpoints/ch07_random_kill_campaign.py --output PATH \\
        [--trials N | --quick] [--seed N] [--kills K] [--jobs J] \\
        [--kill-at boundary|instant] [--stale-holder] \\
        [--probe correct|filename-only] [--ttl S] [--wait S]

Each trial copies a fresh world (40 scans on the drive, an empty mail
provider, the 43-step restock plan stored in the journal: 40 renames, the
gate ``verify_drive`` at step 41, two mails) and starts the worker, which
claims the task for ``--ttl`` seconds (an intent renews it once a quarter of
it is spent; each request declares a ``--wait``). ``--kill-at`` says where it dies:

boundary  (the default) at a uniformly random (step, boundary): the worker
          holds at ``step-N:PHASE`` and is SIGKILLed there. Each further kill
          of ``--kills`` is later in the plan.
instant   at a uniformly random INSTANT, wherever the worker is: starting up,
          inside a SQLite transaction, between two lines. A timer runs from
          the moment the process was started; no boundary is involved. The
          instant is u x SPAN: u is uniform in [0, 1) and drawn from
          ``--seed``; SPAN is the longest of three uninterrupted runs, each
          timed from its start to its exit, ``--jobs`` at a time, just before
          the trials. Every resumed run draws a new instant; a run that ends
          before its instant is recorded as such, and then nothing is left to
          kill.

A killed worker's lease is never broken: the next process waits until it has
run out (``journal.wait_out``), as any replacement must. A run that ends held
(exit 4) or stale (exit 5) all the same fails its trial, with its own line,
its stderr and the journal's holder: it is never started again (issue 36).
While the worker is down, the supplier files its own document under the name
the interrupted step gives (after an instant: the step in doubt, or else the
first step not started). The gate then finds that the plan no longer fits the
drive and ends the run, exit 3, before any mail. The campaign does what the
person of chapter 09 would: it gives the supplier's document a name of its own
and starts the run again. A last process finishes the plan; the mail provider
delivers.

A trial holds when the end state equals an uninterrupted run's, the services'
own records show no action performed twice, every kill left at most one step
in doubt (the last row) and no mail that the journal proves unsent, a
boundary kill left the journal where its point says, and every gate refusal
found a supplier document under a planned name and left no row for the gate.

``--stale-holder`` runs the case ``live_stale_holder`` instead: the first
worker is not killed but stopped, alive, at a random step, either after its
intent or after its admission (``step-N:admitted``, the residual window),
held at that boundary or frozen there with SIGSTOP. Once its lease has run
out, replacements start; each of the first ``--kills`` (at most 3: a held
worker gives up after 30 s) is SIGKILLed at a random instant, u x SPAN x
(steps left / 43), since a replacement resumes (a crash during recovery); a
last one finishes the plan; then the first worker is let go. Counted from
the services' rows: a rename twice (the drive takes the step's operation
key, so the late request is a replay: must be 0), a mail twice outside the
residual window (must be 0), and the mail provider's LATE DUPLICATE, which
only a holder paused in the residual window on a mail step can send, with how
the probe finds it: by the ``X-Operation-Key`` header it carries. The first
worker must end refused (exit 5).

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
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import crashcourse
from crashcourse import journal, store
from crashcourse.lab import experiment
from crashcourse.lab.example import restock_plan
from crashcourse.lab.harness import (
    BoundaryNotReached,
    Finished,
    Harness,
    Moments,
    last_words,
)
from crashcourse.services import drive, mail
from crashcourse.store import opened
from crashcourse.validate import check_number
from crashcourse.workers.journal_worker import (
    HELD,
    PROBE_VARIANTS,
    REFUSED,
    STALE,
    build_world,
    paths,
)

EVIDENCE_ID = "crashcourse.ch07.random_kill_campaign/3"
QUICK_TRIALS = 4
KILL_AT = ("boundary", "instant")
PLAN = restock_plan()
GATE = next(step.number for step in PLAN.steps if step.gate)
MAILS = sum(step.irreversible for step in PLAN.steps)
MAIL_STEPS = tuple(step.number for step in PLAN.steps if step.irreversible)
RENAME_STEPS = tuple(s.number for s in PLAN.steps if s.action == "rename")
PLANNED_NAMES = {s.args["name"] for s in PLAN.steps if s.action == "rename"}
SPAN_RUNS = 3  # uninterrupted runs timed for --kill-at instant: the longest is SPAN
# Where the journal stood at a kill, read from its rows (the chapter's figure).
STOOD = ("no row yet", "a step in doubt", "between steps", "every step confirmed")
# Where a live stale holder stops: after its intent (the admission will refuse
# it), or after its admission (the residual window); and how it is stopped.
PAUSES = ("after_intent", journal.ADMITTED)
STOPS = ("held", "frozen")
MAX_STALE_KILLS = 3  # a held worker gives up after boundary.HOLD_SECONDS (30 s)
SRC = str(Path(crashcourse.__file__).resolve().parent.parent)
ENV = {"PYTHONPATH": SRC}  # added to every worker's environment
# -S skips site-packages: the worker needs only the stdlib and src/ (PYTHONPATH)
WORKER = ["-S", "-m", "crashcourse.workers.journal_worker"]


# --- kill plans: what a trial will do, drawn from the seed before it runs ---------


@dataclass(frozen=True)
class BoundaryKill:
    """SIGKILL at ``step-N:boundary``."""

    step: int
    boundary: str

    def planned(self, span_s: float | None) -> dict:
        return {"step": self.step, "boundary": self.boundary}

    def said(self, span_s: float | None) -> str:
        return f"step {self.step} {self.boundary}"


@dataclass(frozen=True)
class InstantKill:
    """SIGKILL ``fraction`` x SPAN seconds after the worker was started."""

    fraction: float

    def planned(self, span_s: float | None) -> dict:
        return {"fraction": round(self.fraction, 6),
                "planned_s": round(self.fraction * span_s, 4)}

    def said(self, span_s: float | None) -> str:
        return f"{self.fraction * span_s:.3f} s"


@dataclass(frozen=True)
class StaleHolder:
    """A first worker stopped alive at ``step-N:pause`` (``held`` at the
    boundary or ``frozen`` there), replacements killed at ``kills``, a last
    one finishing, then the first let go."""

    step: int
    pause: str
    stop: str
    kills: tuple[InstantKill, ...]

    def planned(self, span_s: float | None) -> dict:
        return {"step": self.step, "pause": self.pause, "stop": self.stop,
                # the instant's span depends on the steps left at its start
                "replacement_kills": [round(k.fraction, 6) for k in self.kills]}

    def said(self, span_s: float | None) -> str:
        return f"{self.stop} at step-{self.step}:{self.pause}"

    @property
    def late_mail(self) -> int:
        """The duplicates no check on the agent's side can prevent: a holder
        paused in the residual window on a step whose service takes no key."""
        return int(self.pause == journal.ADMITTED and self.step in MAIL_STEPS)


@dataclass
class World:
    """The template world every trial copies, and how its workers run."""

    template: str
    task: str
    kill_at: str
    lease: tuple[str, ...]  # the workers' --ttl and --wait
    probe: str = "correct"
    reference: dict | None = None
    span_s: float | None = None

    def args(self, directory: str, owner: str = "worker") -> list[str]:
        return [*WORKER, "--dir", directory, "--task", self.task, "--probe",
                self.probe, *self.lease, "--owner", owner]


# --- what the rows say -------------------------------------------------------------


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


def settled(directory: str, task: str) -> None:
    """Wait until no lease on the task is live: a killed worker's runs out
    on its own, and a replacement may only claim after it (chapter 05)."""
    with opened(paths(directory)["journal"]) as conn:
        journal.wait_out(conn, task, timeout=experiment.TIMEOUT)


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
    moments = Moments()
    moments.mark("gate refused")
    return {"supplier_documents": found, "journal": view, "moments": moments}


class LeaseLost(BoundaryNotReached):
    """A worker ended held (exit 4) or stale (exit 5) although the previous
    lease was over by the store's clock when it started: the trial cannot go
    on, and it is not started again (issue 36). Recorded as the trial's
    error, with the worker's own line, its stderr and the journal's holder."""


def lost_lease(directory: str, task: str, finished: Finished) -> str:
    """Why a run ended held or stale, from its report and the journal's row."""
    with opened(paths(directory)["journal"]) as conn:
        seen = journal.holder(conn, task)
        now = store.now(conn)
    row = None if seen is None else dict(seen)
    what = "held" if finished.returncode == HELD else "stale"
    report = finished.stdout.strip().splitlines()[-1:] or ["(no report)"]
    return (f"a worker ended {what} though no lease on {task} was live by the"
            f" store's clock when it started: {report[0]}{last_words(finished)};"
            f" the journal's holder then: {row} at store time {now}")


def answered(launch, directory: str, task: str) -> tuple:
    """``launch()`` (it returns its result, the worker's exit status or None
    while it runs, and the exited worker's ``Finished`` or None), each once
    no lease on the task is live (``settled``); after a gate refusal, the
    person's answer and one more ``launch()``. A run that ends held or stale
    is not started again: ``LeaseLost`` says why. Returns the last result
    and the refusals (at most two)."""
    refusals = []
    while True:
        settled(directory, task)
        result, status, finished = launch()
        if status == REFUSED and len(refusals) < 2:
            refusals.append(gate_refusal(directory, task))
            if len(refusals) == 1:
                continue  # moving the documents did not help: recorded, judged
        elif status in (HELD, STALE):
            raise LeaseLost(lost_lease(directory, task, finished))
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


# --- the kills ---------------------------------------------------------------------


def kill_at_boundary(harness, world: World, directory: str, kill: BoundaryKill
                     ) -> dict:
    """Start (or resume) the worker, SIGKILL it at (step, boundary), look around."""
    task, moments = world.task, Moments()  # the parent's instants: the picture

    def launch():
        moments.mark("start")  # no lease is live: answered waited it out
        worker = harness.start(world.args(directory),
                               stop_at=f"step-{kill.step}:{kill.boundary}")
        try:
            worker.wait_for_boundary(timeout=experiment.TIMEOUT)
        except BoundaryNotReached:
            if worker.process.returncode not in (REFUSED, HELD, STALE):
                raise
            # e.g. the gate refused first
            moments.mark(f"exit {worker.process.returncode}")
            return None, worker.process.returncode, worker.finished
        moments.mark(f"at step-{kill.step}:{kill.boundary}")
        return worker, None, None

    worker, refusals = answered(launch, directory, task)
    if worker is None:
        raise BoundaryNotReached(f"no run reached step-{kill.step}:{kill.boundary}")
    killed = worker.kill()
    moments.mark("killed")
    seen = look_around(directory, task, killed.returncode)
    want = expected_position(kill.step, kill.boundary)
    seen["checks"] |= {
        "killed_by_sigkill": killed.returncode == -9,
        "journal_where_killed": all(seen["journal"][k] == v for k, v in want.items()),
    }
    injected = inject_collision(directory, kill.step)
    if injected:
        moments.mark("supplier's file")
    return {"step": kill.step, "boundary": kill.boundary, **seen,
            "gate_refusals": refusals, "injected": injected, "moments": moments}


def kill_at_instant(harness, args, directory: str, task: str, fraction: float,
                    span: float, inject: bool = True) -> dict:
    """Start (or resume) the worker ``args`` and SIGKILL its group ``fraction
    * span`` seconds after it was started, wherever it is, unless it ended
    first; then (``inject``) the supplier's collision."""
    planned, moments = fraction * span, Moments()  # the parent's instants

    def launch():
        moments.mark("start")  # no lease is live: answered waited it out
        worker = harness.start(args)
        try:
            worker.process.wait(
                timeout=max(0.0, worker.started + planned - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass  # still running at the instant: the usual case
        at = time.monotonic() - worker.started
        finished = worker.kill(expect_sigkill=False)  # SIGKILL unless it ended
        moments.mark("killed" if finished.returncode == -9
                     else f"exit {finished.returncode}")
        return (finished, at), finished.returncode, finished

    (finished, at), refusals = answered(launch, directory, task)
    seen = look_around(directory, task, finished.returncode)
    done = seen["journal"]["confirmed"] == len(PLAN.steps)
    seen["checks"]["killed_or_ran_to_the_end"] = (
        finished.returncode == -9 or (finished.returncode == 0 and done))
    doubt, last = seen["journal"]["in_doubt_steps"], seen["journal"]["last_row"]
    step = doubt[0] if doubt else last + 1 if last < len(PLAN.steps) else None
    killed = finished.returncode == -9
    injected = inject_collision(directory, step) if killed and inject else None
    if injected:
        moments.mark("supplier's file")
    return {"fraction": round(fraction, 6), "span_s": round(span, 4),
            "planned_s": round(planned, 4), "at_s": round(at, 4),
            "interrupted_step": step if killed else None,
            **seen, "gate_refusals": refusals,
            "injected": injected, "moments": moments}


def copy_world(template: str, directory: str) -> None:
    """A trial's fresh world: copies of the template's closed SQLite files."""
    for source, target in zip(paths(template).values(), paths(directory).values(),
                              strict=True):
        shutil.copyfile(source, target)


def run_trial(harness: Harness, directory: str, number: int, points: list,
              world: World) -> dict:
    """Kill at each point in turn, resume to the end, check from durable rows."""
    copy_world(world.template, directory)
    task, kills = world.task, []
    for point in points:
        if isinstance(point, BoundaryKill):
            kills.append(kill_at_boundary(harness, world, directory, point))
            continue
        kills.append(kill_at_instant(harness, world.args(directory), directory,
                                     task, point.fraction, world.span_s))
        if kills[-1]["returncode"] != -9:
            break  # the run ended before its instant: nothing is left to kill

    moments = Moments()  # the last run's instants (each kill has its own)

    def finish():
        moments.mark("start")
        done = harness.run(world.args(directory), timeout=experiment.TIMEOUT)
        moments.mark(f"exit {done.returncode}")
        return done, done.returncode, done

    resumed, refusals = answered(finish, directory, task)
    final = end_state(directory)
    after = journal_view(directory, task)
    return judge(number, kills, resumed.returncode, refusals, final, after,
                 world.reference) | {"moments": moments}


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
    return {"trial": number, "case": "killed_holder", "holds": all(checks.values()),
            "checks": checks, "kills": kills, "resume_gate_refusals": refusals,
            "resumed_returncode": resumed_rc, "journal_after": after,
            "duplicates": final["duplicates"], "files_differing": differs}


# --- the live stale holder ----------------------------------------------------------


def stale_holder_trial(harness: Harness, directory: str, number: int,
                       plan: StaleHolder, world: World) -> dict:
    """The first worker stopped alive at its pause, replacements killed at
    instants, a last one finishing, the first let go; judged from the rows."""
    copy_world(world.template, directory)
    task, moments = world.task, Moments()  # the holder's and the last run's
    holder = harness.start(world.args(directory, "holder"),
                           stop_at=f"step-{plan.step}:{plan.pause}")
    holder.wait_for_boundary(timeout=experiment.TIMEOUT)
    moments.mark(f"holder at step-{plan.step}:{plan.pause}")
    at_pause = journal_view(directory, task)
    if plan.stop == "frozen":
        holder.freeze()  # SIGSTOP: alive, its lease running out
        holder.release()  # read once it runs again
        moments.mark("holder frozen")
    kills = []
    for kill in plan.kills:  # each waits out the lease before it starts
        kills.append(kill_at_instant(
            harness, world.args(directory, "replacement"), directory, task,
            kill.fraction, resumed_span(world, directory), inject=False))
        if kills[-1]["returncode"] != -9:
            break

    def finish():
        moments.mark("last replacement starts")
        done = harness.run(world.args(directory, "replacement"),
                           timeout=experiment.TIMEOUT)
        moments.mark(f"last replacement exit {done.returncode}")
        return done, done.returncode, done

    resumed, _ = answered(finish, directory, task)
    holder.thaw() if plan.stop == "frozen" else holder.release()
    moments.mark("holder let go")
    late = holder.finish(experiment.TIMEOUT)
    moments.mark(f"holder exit {late.returncode}")
    where = paths(directory)
    final, after = end_state(directory), journal_view(directory, task)
    messages = mail.messages(where["mail"])
    with opened(where["drive"]) as drive_db:
        replays = drive_db.execute(
            "SELECT coalesce(sum(replays), 0) FROM rename_requests").fetchone()[0]
    return judge_stale(number, plan, world.reference, {
        "at_pause": at_pause, "kills": kills, "resumed_returncode": resumed.returncode,
        "holder_returncode": late.returncode,
        "final": final, "journal_after": after, "messages": messages,
        "renames_replayed": replays, "span_s": world.span_s, "moments": moments})


def resumed_span(world: World, directory: str) -> float:
    """The span a replacement's instant is drawn in: SPAN scaled to the steps
    it has left, since a resumed run does only those."""
    left = len(PLAN.steps) - journal_view(directory, world.task)["confirmed"]
    return world.span_s * max(left, 1) / len(PLAN.steps)


def found_by_key(messages: list[dict]) -> list[int]:
    """The steps whose operation key, searched in the provider's
    ``X-Operation-Key`` column as the probe searches it, finds more than one
    message: how a late duplicate is detected."""
    keys = Counter(m["operation_key"] for m in messages if m["operation_key"])
    return sorted(int(key.split("/")[1]) for key, n in keys.items() if n > 1)


def first_per_key(messages: list) -> list:
    """The provider's messages, the first under each operation key only."""
    seen, kept = set(), []
    for message in messages:
        if message[2] not in seen:
            seen.add(message[2])
            kept.append(message)
    return kept


def judge_stale(number: int, plan: StaleHolder, reference: dict, seen: dict) -> dict:
    """Each check as a named boolean, from the rows ``seen`` holds."""
    kills, final = seen["kills"], seen["final"]
    twice = found_by_key(seen["messages"])
    late = final["duplicates"]["mails"] if plan.late_mail else 0
    replay_expected = int(plan.pause == journal.ADMITTED
                          and plan.step in RENAME_STEPS)
    checks = {name: all(k["checks"][name] for k in kills)
              for name in (kills[0]["checks"] if kills else {})}
    state = final["state"]
    checks |= {
        "holder_stopped_after_its_intent":
            seen["at_pause"]["in_doubt_steps"] == [plan.step],
        "replacement_finished": seen["resumed_returncode"] == 0
        and seen["journal_after"]["confirmed"] == len(PLAN.steps),
        "holder_refused_once_let_go": seen["holder_returncode"] == STALE,
        "renames_once": final["duplicates"]["renames"] == 0,
        "mails_once_outside_the_window":
            final["duplicates"]["mails"] - late == 0,
        "late_mail_as_predicted": late == plan.late_mail,
        "late_mail_found_by_its_key": twice == ([plan.step] if late else []),
        "late_rename_replayed_not_repeated":
            seen["renames_replayed"] == replay_expected,
        "end_state_equal": state["files"] == reference["files"]
        and first_per_key(state["messages"]) == reference["messages"],
    }
    return {"trial": number, "case": "live_stale_holder",
            "holds": all(checks.values()), "checks": checks,
            "holder": plan.planned(seen["span_s"])
            | {"returncode": seen["holder_returncode"]},
            "at_pause": seen["at_pause"], "kills": kills,
            "resumed_returncode": seen["resumed_returncode"],
            "journal_after": seen["journal_after"],
            "duplicates": final["duplicates"], "late_mail_duplicates": late,
            "late_duplicates_found_by_key": twice,
            "renames_replayed": seen["renames_replayed"], "moments": seen["moments"]}


# --- the draw, the trials, the summary ------------------------------------------------


def uninterrupted_run(harness: Harness, folder: Path, world: World) -> dict:
    """One run with no kill, in a worker process too: its end state, and how
    long it lived from the moment it was started to its exit."""
    directory = str(folder)
    copy_world(world.template, directory)
    worker = harness.start(world.args(directory))
    worker.process.wait(timeout=experiment.TIMEOUT)
    lived = time.monotonic() - worker.started
    done = worker.finish(experiment.TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f"uninterrupted run failed: {done.stderr}")
    return {"state": end_state(directory)["state"], "lived_s": round(lived, 4)}


def kill_points(trials: int, kills: int, seed: int) -> list[list[BoundaryKill]]:
    """Per trial, ``kills`` (step, boundary) pairs, fixed by ``seed``.

    Steps are drawn uniformly without replacement and visited in order (each
    resumed run is killed again later in the plan); each boundary is uniform.
    """
    rng = random.Random(seed)
    numbers = range(1, len(PLAN.steps) + 1)
    return [[BoundaryKill(step, rng.choice(journal.PHASES))
             for step in sorted(rng.sample(numbers, kills))]
            for _ in range(trials)]


def instant_fractions(trials: int, kills: int, seed: int) -> list[list[float]]:
    """Per trial, ``kills`` fractions u, uniform in [0, 1), fixed by ``seed``:
    the n-th run of a trial is killed u x SPAN seconds after its start."""
    rng = random.Random(seed)
    return [[rng.random() for _ in range(kills)] for _ in range(trials)]


def stale_holders(trials: int, kills: int, seed: int) -> list[StaleHolder]:
    """Per trial, where the first worker stops (a uniform step and pause),
    how (held or frozen), and ``kills`` instants for its replacements."""
    rng = random.Random(seed)
    return [StaleHolder(rng.randint(1, len(PLAN.steps)), rng.choice(PAUSES),
                        rng.choice(STOPS),
                        tuple(InstantKill(rng.random()) for _ in range(kills)))
            for _ in range(trials)]


def campaign(trials: int, kills: int, seed: int, probe: str, jobs: int,
             kill_at: str = "boundary", stale: bool = False,
             lease: tuple[str, ...] = ()) -> dict:
    """Build the template world, time the uninterrupted runs, run every trial."""
    with tempfile.TemporaryDirectory() as template:
        world = World(template, build_world(template, PLAN),
                      "instant" if stale else kill_at, lease, probe)
        runs = SPAN_RUNS if world.kill_at == "instant" else 1
        timed = experiment.run_trials(
            [experiment.Trial(f"uninterrupted #{n}", {}, (world,))
             for n in range(1, runs + 1)],
            uninterrupted_run, jobs=jobs, env=ENV, progress=False)
        if failed := [t["error"] for t in timed if "error" in t]:
            raise RuntimeError(f"an uninterrupted run did not finish: {failed[0]}")
        world.reference = timed[0]["state"]
        if any(t["state"] != world.reference for t in timed):
            raise RuntimeError("two uninterrupted runs ended in different states")
        if world.kill_at == "instant":
            world.span_s = max(t["lived_s"] for t in timed)
        if stale:
            points = stale_holders(trials, kills, seed)
        elif kill_at == "boundary":
            points = kill_points(trials, kills, seed)
        else:
            points = [[InstantKill(u) for u in fractions]
                      for fractions in instant_fractions(trials, kills, seed)]
        done = run_kill_plans(points, jobs, world)
    return {"reference": world.reference, "trials": done,
            "uninterrupted_s": [t["lived_s"] for t in timed], "span_s": world.span_s}


def where(kill: dict) -> str:
    """A planned kill in words, for the progress lines."""
    if "pause" in kill:
        return f"{kill['stop']} at step-{kill['step']}:{kill['pause']}"
    if "boundary" in kill:
        return f"step {kill['step']} {kill['boundary']}"
    return f"{kill['planned_s']:.3f} s"


def run_point(harness: Harness, folder: Path, number: int, point, world: World
              ) -> dict:
    """One trial: a live stale holder, or a killed one at its points."""
    one = stale_holder_trial if isinstance(point, StaleHolder) else run_trial
    return one(harness, str(folder), number, point, world)


def run_kill_plans(points: list, jobs: int, world: World) -> list[dict]:
    """Every trial, ``jobs`` at a time; a failed one keeps what was planned."""
    trials = []
    for number, point in enumerate(points, start=1):
        stale = isinstance(point, StaleHolder)
        plan = ([point.planned(world.span_s)] if stale
                else [kill.planned(world.span_s) for kill in point])
        said = ", ".join(where(kill) for kill in plan)
        trials.append(experiment.Trial(
            f"trial {number}: holder {said}" if stale
            else f"trial {number} killed at {said}",
            {"trial": number, "planned_kills": plan}, (number, point, world)))
    return experiment.run_trials(trials, run_point, jobs=jobs, env=ENV)


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
        + sum(len(r.get("resume_gate_refusals", ())) for r in finished),
        "max_in_doubt_at_kill": max((k["journal"]["in_doubt"] for k in kills),
                                    default=None),
        "kills_by_journal_state": {state: sum(k["journal_stood"] == state
                                              for k in kills) for state in STOOD},
    }
    if kill_at == "boundary":
        summary["kills_by_boundary"] = {
            phase: sum(k["boundary"] == phase for k in kills)
            for phase in journal.PHASES}
    stale = [r for r in finished if r.get("case") == "live_stale_holder"]
    if stale:
        late = sum(r["late_mail_duplicates"] for r in stale)
        summary |= {
            "case": "live_stale_holder",
            "effects_twice": sum(r["duplicates"]["renames"] for r in stale)
            + sum(r["duplicates"]["mails"] for r in stale) - late,
            "late_mail_duplicates": late,
            "late_duplicates_found_by_key": sum(
                len(r["late_duplicates_found_by_key"]) for r in stale),
            "late_renames_replayed": sum(r["renames_replayed"] for r in stale),
            "holder_returncodes": dict(sorted(Counter(
                str(r["holder"]["returncode"]) for r in stale).items())),
            "holders_by_pause": {pause: sum(r["holder"]["pause"] == pause
                                            for r in stale) for pause in PAUSES},
            "holders_by_stop": {stop: sum(r["holder"]["stop"] == stop
                                          for r in stale) for stop in STOPS},
        }
    return summary


def kills_per_trial(text: str) -> int:
    """The type of ``--kills``: 1 up to the plan's number of steps."""
    value = experiment.parse_count(text)
    if value > len(PLAN.steps):
        raise argparse.ArgumentTypeError(
            f"at most {len(PLAN.steps)} (one per step of the plan), got {value}")
    return value


def seconds(text: str) -> float:
    """The type of ``--ttl`` and ``--wait``: finite seconds above 0, in ASCII
    digits (``validate.check_number``: float() alone takes "٣", issue 35)."""
    try:
        return check_number("seconds", text, 0, 60, low_open=True)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be seconds in (0, 60] in ASCII digits, got {text!r}") from None


def run(args) -> tuple[dict, list[dict], dict]:
    trials, kills = (QUICK_TRIALS, 2) if args.quick else (args.trials, args.kills)
    lease = ("--ttl", str(args.ttl), "--wait", str(args.wait))
    done = campaign(trials, kills, args.seed, args.probe, args.jobs, args.kill_at,
                    args.stale_holder, lease)
    kill_at = "instant" if args.stale_holder else args.kill_at
    summary = summarize(done["trials"], kill_at)
    if kill_at == "instant":
        summary |= {"span_s": done["span_s"],
                    "uninterrupted_s": done["uninterrupted_s"]}
    for number in summary["failed_trials"]:
        bad = done["trials"][number - 1]
        failing = bad.get("error") or ", ".join(
            name for name, ok in bad["checks"].items() if not ok)
        plan = bad.get("planned_kills") or [bad.get("holder")] if "holder" in bad \
            else bad.get("planned_kills") or bad["kills"]
        said = ", ".join(where(k) for k in plan)
        how = "holder" if "pause" in plan[0] else "killed at"
        print(f"FAILED trial {number} ({how} {said}): {failing}", file=sys.stderr)
    parameters = {"trials": trials, "kills": kills, "seed": args.seed,
                  "kill_at": kill_at, "stale_holder": args.stale_holder,
                  "probe": args.probe, "jobs": args.jobs, "ttl": args.ttl,
                  "wait": args.wait}
    return summary, done["trials"], {"parameters": parameters,
                                     "reference": done["reference"]}


def command_line():
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
    parser.add_argument("--stale-holder", action="store_true",
                        help="the case live_stale_holder: the first worker stopped "
                        "alive after its intent or admission, replacements killed "
                        f"at instants (--kills, at most {MAX_STALE_KILLS}), then "
                        "let go (default: killed holders only)")
    parser.add_argument("--probe", choices=PROBE_VARIANTS, default="correct",
                        help="how a resumed run checks a step in doubt; "
                        "filename-only is the mutant (default: %(default)s)")
    parser.add_argument("--jobs", type=experiment.parse_count, default=2,
                        metavar="J", help="trials at a time (default: %(default)s)")
    parser.add_argument("--ttl", type=seconds, default=1.0, metavar="S",
                        help="the workers' lease, renewed by an intent once a "
                        "quarter of it is spent; a killed worker's runs out "
                        "before a replacement starts (default: %(default)s)")
    parser.add_argument("--wait", type=seconds, default=0.25, metavar="S",
                        help="each request's declared wait, below --ttl "
                        "(default: %(default)s)")
    return parser


def cross_checks(args) -> str | None:
    """Options that each parse but cannot go together, refused before anything."""
    if args.wait >= args.ttl:
        return f"--wait ({args.wait}) must be below --ttl ({args.ttl})"
    if args.stale_holder and not args.quick and args.kills > MAX_STALE_KILLS:
        return (f"--stale-holder kills at most {MAX_STALE_KILLS} replacements"
                " per trial (a held worker gives up after 30 s)")
    return None


main = experiment.script(__file__, evidence_id=EVIDENCE_ID, run=run,
                         parser=command_line(), check=cross_checks)

if __name__ == "__main__":
    sys.exit(main())
