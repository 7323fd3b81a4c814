"""Chapter 08 checkpoint: two recovery workers, one winner, no call twice.

    python checkpoints/ch08_workflow_recovery.py --output PATH [--quick]

Every case gets a fresh world (``workflow_worker.build_world``: the worker's
own file, the payment service's, the mail provider's) and its own real
supplier process. Workers are real processes (``workflow_worker``); a
boundary kill is a real SIGKILL. Cases:

* ``before_remote:<step>`` / ``after_remote:<step>`` for reserve, charge and
  mail: a worker is killed at the boundary. Two recovery workers then start,
  are held at ``after_read`` (both have read the same state and version) and
  are released together. Exactly one makes the next transition (``winners``
  1), the other is refused and exits 3, and every operation key is recorded
  once by its service (``service_ops``); the workflow ends applied.
* ``waiting_for_approval``: a worker with no approval leaves the workflow
  waiting; the script approves the charge (a fixture standing in for a
  person) and two recovery workers race to resume it.
* ``cancel:pending`` / ``cancel:waiting_for_approval``: the script, as the
  person, cancels while two workers hold what they read; both are refused.
  ``cancel:after_remote:<step>``: the person cancels while the worker is
  between a remote call and its outcome; the worker is refused. Then the
  person compensates: the reservation is released with its own key, a charge
  is a refund a person owes, a sent mail cannot be unsent.
* ``naive:before_remote:mail``: the chapter's DRAFT (unversioned
  transitions). It holds when the grader SEES two mails under one key and two
  workers writing: a detected mutant, not a pass of the draft.

Every count is read from rows: the supplier's ``requests`` (every POST it
decided, releases included), the payment service's ``payments``, the mail
provider's ``messages``, the worker's history (``who`` made which version).
``--quick`` runs four cases. Exit 0 only when every case holds, else 1; an
``--output`` that exists or cannot be written is refused (exit 2) before
anything runs.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

from crashcourse import evidence, experiment, workflow, workflow_steps
from crashcourse.harness import Harness
from crashcourse.services import mail, payments, start_supplier
from crashcourse.store import opened, table_rows
from crashcourse.workers import workflow_worker

SCHEMA = "crashcourse.ch08.workflow_recovery/1"
STEPS = ("reserve", "charge", "mail")
KILLS = tuple(f"{where}:{step}" for step in STEPS
              for where in ("before_remote", "after_remote"))
CANCELS = ("cancel:pending", "cancel:waiting_for_approval",
           "cancel:after_remote:reserve", "cancel:after_remote:mail")
NAIVE = "naive:before_remote:mail"
CASES = (*KILLS, "waiting_for_approval", *CANCELS, NAIVE)
QUICK = ("after_remote:mail", "waiting_for_approval", "cancel:after_remote:mail",
         NAIVE)
FIRST, RACERS, PERSON = "worker-1", ("recovery-a", "recovery-b"), "person"
REFUSED = workflow_worker.EXIT["refused"]
# What each cancel case must leave: step -> compensation status.
UNDONE, OWED, SENT = (workflow_steps.UNDONE, workflow_steps.NEEDS_PERSON,
                      workflow_steps.CANNOT_UNDO)
COMPENSATED = {"cancel:pending": {}, "cancel:waiting_for_approval": {"reserve": UNDONE},
               "cancel:after_remote:reserve": {"reserve": UNDONE},
               "cancel:after_remote:mail": {"reserve": UNDONE, "charge": OWED,
                                            "mail": SENT}}
APPROVED_UP_FRONT = "approval given up front by build_world, standing in for a person"


class World:
    """One case's files and supplier process, and how to start its workers."""

    def __init__(self, harness: Harness, directory: Path, approved: bool):
        self.harness, self.directory = harness, str(directory)
        built = workflow_worker.build_world(self.directory, approved=approved)
        self.id, self.paths = built["workflow_id"], built["paths"]
        self.choices = built["choices"]
        self.created = self.rows()["worker"]["workflows"][0]["choices"]
        self.url = start_supplier(harness, self.paths["supplier"]).url

    def args(self, who: str, mode: str = "versioned") -> list[str]:
        return ["-m", "crashcourse.workers.workflow_worker", "--dir", self.directory,
                "--workflow", self.id, "--who", who, "--url", self.url,
                "--mode", mode]

    def rows(self) -> dict:
        """Every durable row a grader reads, from the four files."""
        with opened(self.paths["workflow"]) as conn:
            worker = workflow_steps.snapshot(conn)
        with opened(self.paths["supplier"]) as conn:
            supplier = {table: table_rows(conn, table)
                        for table in ("orders", "releases", "requests", "fences")}
        return {"worker": worker, "supplier": supplier,
                "payments": payments.snapshot(self.paths["payments"])["payments"],
                "mail": mail.messages(self.paths["mail"])}

    def interrupt(self, who: str, at: str, mode: str = "versioned"):
        """Start a worker that holds at boundary ``at``."""
        worker = self.harness.start(self.args(who, mode), stop_at=at)
        worker.wait_for_boundary(experiment.TIMEOUT)
        return worker

    def race(self, mode: str = "versioned", between=None) -> list:
        """Two workers held at ``after_read``, released together."""
        racers = [self.interrupt(who, "after_read", mode) for who in RACERS]
        if between is not None:
            between()  # the person acts while both hold what they read
        for racer in racers:
            racer.release()
        return [(racer.finish(experiment.TIMEOUT), who)
                for racer, who in zip(racers, RACERS, strict=True)]

    def cancel(self) -> int:
        """The person cancels what they see now (the script plays them)."""
        with opened(self.paths["workflow"]) as conn:
            seen = workflow.read(conn, self.id)["version"]
            return workflow.cancel(conn, self.id, expected_version=seen, who=PERSON)

    def compensate(self) -> dict:
        remotes = workflow_worker.restock_remotes(self.paths, self.url)
        with opened(self.paths["workflow"]) as conn:
            return workflow_steps.compensate(conn, self.id, remotes, who=PERSON)


def kill_case(world: World, case: str, mode: str = "versioned") -> dict:
    """SIGKILL at the boundary, then two recovery workers race."""
    at = case.split(":", 1)[1] if case == NAIVE else case
    killed = world.interrupt(FIRST, at, mode).kill()
    rows = world.rows()
    return {"interrupted": {"who": FIRST, "pid": killed.pid, "boundary": at,
                            "returncode": killed.returncode},
            "at_interruption": rows, "finished": world.race(mode),
            "fixture": [APPROVED_UP_FRONT]}


def approval_case(world: World, case: str) -> dict:
    """No approval: the first run waits; the script approves; a race."""
    waited = world.harness.run(world.args(FIRST), experiment.TIMEOUT)
    rows = world.rows()
    payments.approve(world.paths["payments"], **world.choices["charge"])
    return {"interrupted": {"who": FIRST, "pid": waited.pid, "boundary": None,
                            "returncode": waited.returncode},
            "at_interruption": rows, "finished": world.race(),
            "fixture": ["the script approves the charge, standing in for a person"]}


def cancel_case(world: World, case: str) -> dict:
    """The person cancels while workers hold; then compensates."""
    parts = {"interrupted": None, "fixture": [
        "the script cancels and compensates, standing in for a person"]}
    if case == "cancel:waiting_for_approval":
        waited = world.harness.run(world.args(FIRST), experiment.TIMEOUT)
        parts["interrupted"] = {"who": FIRST, "pid": waited.pid, "boundary": None,
                                "returncode": waited.returncode}
    if case.startswith("cancel:after_remote"):
        parts["fixture"].append(APPROVED_UP_FRONT)
        held = world.interrupt(FIRST, case.split(":", 1)[1])
        parts["interrupted"] = {"who": FIRST, "pid": held.pid, "held": True,
                                "boundary": case.split(":", 1)[1], "returncode": None}
        parts["at_interruption"] = world.rows()
        parts["cancelled_version"] = world.cancel()
        held.release()  # its outcome transition comes too late
        parts["finished"] = [(held.finish(experiment.TIMEOUT), FIRST)]
    else:
        parts["at_interruption"] = world.rows()
        parts["finished"] = world.race(between=lambda: parts.update(
            cancelled_version=world.cancel()))
    parts["compensated"] = world.compensate()
    return parts


def service_ops(rows: dict) -> dict[str, int]:
    """Operation key -> times a service recorded it: every POST the supplier
    decided (orders and releases), payments, mail messages."""
    ops = Counter(r["operation_key"] for r in rows["supplier"]["requests"]
                  if r["method"] == "POST")
    ops.update(p["key"] for p in rows["payments"])
    ops.update(m["operation_key"] for m in rows["mail"])
    return dict(ops)


def won(rows: dict, who: str, after: int) -> int:
    """Transitions ``who`` made after version ``after``, from history rows."""
    return sum(1 for r in rows["worker"]["workflow_history"]
               if r["who"] == who and r["version"] > after)


def contender(finished, who: str, rows: dict, after: int) -> dict:
    """A worker that raced: its pid, exit code and the transitions it won."""
    lines = finished.stdout.strip().splitlines()
    return {"who": who, "pid": finished.pid, "exit_code": finished.returncode,
            "transitions_won": won(rows, who, after),
            "report": json.loads(lines[-1]) if lines else None,
            "traceback": "Traceback" in finished.stderr}


def run_case(harness: Harness, directory: Path, case: str) -> dict:
    kind = ("kill" if case in KILLS else "naive" if case == NAIVE
            else "cancel" if case in CANCELS else "approval")
    approved = kind in ("kill", "naive") or case.startswith("cancel:after_remote")
    world = World(harness, directory, approved)
    run = {"kill": kill_case, "approval": approval_case, "cancel": cancel_case,
           "naive": lambda w, c: kill_case(w, c, "unversioned")}[kind]
    parts = run(world, case)
    after = max(r["version"] for r in parts["at_interruption"]["worker"]
                ["workflow_history"])
    final = world.rows()
    workers = [contender(done, who, final, after) for done, who in parts["finished"]]
    person = None
    if kind == "cancel":
        person = {"who": PERSON, "fixture": True,
                  "transitions_won": won(final, PERSON, after),
                  "cancelled_version": parts["cancelled_version"]}
    return grade(case, kind, world, parts, workers, person, final)


def grade(case, kind, world, parts, workers, person, final) -> dict:
    report = final["worker"]
    with opened(world.paths["workflow"]) as conn:
        fate = workflow_steps.final_report(conn, world.id)
        steps = {s["step"]: s for s in workflow_steps.progress(conn, world.id)}
    keys = {step: s["operation_key"] for step, s in steps.items()}
    ops = service_ops(final)
    contenders = workers + ([person] if person else [])
    winners = sum(c["transitions_won"] > 0 for c in contenders)
    compensation = [{k: c[k] for k in ("step", "operation_key", "action",
                                       "compensation_key", "status", "note")}
                    for c in fate["compensations"]]
    expected = COMPENSATED.get(case, {})
    released = [c["compensation_key"] for c in compensation if c["step"] == "reserve"]
    wanted = ({keys[s] for s in expected} | set(released) if kind == "cancel"
              else set(keys.values()))
    checks = {
        "choices_unchanged": report["workflows"][0]["choices"] == world.created,
        "final_state": fate["state"] == (workflow.CANCELLED if kind == "cancel"
                                         else workflow.APPLIED),
        "every_key_recorded": set(ops) == wanted,
    }
    if kind == "naive":  # the mutant: the grader must see the second mail
        checks["duplicate_mail_seen"] = ops.get(keys["mail"]) == 2
        checks["both_workers_wrote"] = winners == 2
    else:
        checks["one_winner"] = winners == 1
        checks["each_key_once"] = all(n == 1 for n in ops.values())
        checks["losers_exit_cleanly"] = all(
            w["exit_code"] == REFUSED and not w["traceback"]
            for w in workers if w["transitions_won"] == 0)
    if kind == "kill":
        checks["killed_with_sigkill"] = parts["interrupted"]["returncode"] == -9
        step = case.split(":")[1]
        settled = "probed" in (steps[step]["outcome"] or {})
        checks["in_doubt_settled_by_" + ("probe" if "after" in case else "call")] = (
            settled == case.startswith("after_remote"))
    if kind == "approval":
        waited = parts["at_interruption"]["worker"]["workflows"][0]["state"]
        checks["waited_for_a_person"] = waited == workflow.WAITING
    if kind == "cancel":
        checks["person_won"] = person["transitions_won"] == 1
        checks["compensation"] = {c["step"]: c["status"]
                                  for c in compensation} == expected
        releases = [r["operation_key"] for r in final["supplier"]["releases"]]
        checks["released_with_its_own_key"] = releases == released
    return {"case": case, "kind": kind, "mutant": kind == "naive",
            "interrupted": parts["interrupted"], "recovery_workers": workers,
            "person": person, "winners": winners, "service_ops": ops,
            "final_state": fate["state"], "final_report": fate,
            "compensation": compensation,
            "labels": {"fixture": parts["fixture"],
                       "measured": ["winners", "service_ops", "final_state",
                                    "compensation", "recovery_workers"]},
            "rows": {"at_interruption": parts["at_interruption"], "final": final},
            "checks": checks, "holds": all(checks.values())}


def run(args) -> tuple[dict, list[dict]]:
    """Every case (four with ``--quick``), each in a fresh world."""
    cases = [case for case in CASES if not args.quick or case in QUICK]
    progress, trials = experiment.Progress(len(cases)), []
    with tempfile.TemporaryDirectory() as directory, Harness() as harness:
        for number, case in enumerate(cases):
            folder = Path(directory) / f"case-{number}"
            folder.mkdir()
            trial = evidence.attempt({"case": case}, run_case, harness, folder, case)
            trials.append(progress.report(case, trial))
    held = [t for t in trials if t["holds"]]
    return {"cases": len(trials), "held": len(held),
            "winners": {t["case"]: t.get("winners") for t in trials}}, trials


def main(argv: list[str] | None = None) -> int:
    parser = experiment.command_line(
        __doc__, quick_help="four cases only, what the test suite runs")
    return experiment.main(argv, parser=parser, schema=SCHEMA, script=__file__,
                           run=run)


if __name__ == "__main__":
    sys.exit(main())
