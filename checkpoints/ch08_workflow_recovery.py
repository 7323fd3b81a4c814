"""Chapter 08 checkpoint: a workflow recovered by workers that are dead, racing,
paused or killed again, each effect counted from the services' own rows.

    python checkpoints/ch08_workflow_recovery.py --output PATH [--quick]
        [--cases CASE,CASE] [--lease S] [--seed N]

Every case gets a fresh world (``workflow_worker.build_world``: the worker's
own file, the payment service's, the mail provider's) and its own real
supplier process. Workers are real processes (``workflow_worker``) whose
attempts are held ``--lease`` seconds; a kill is a real SIGKILL, a freeze a
real SIGSTOP. Cases:

* ``<point>:<step>`` for each step (reserve, charge, mail) and each point
  (``before_remote``: attempted, not admitted; ``admitted``: the residual
  window; ``after_remote``: called, no outcome): worker-1 is killed there.
  Two recovery workers are held at ``after_read`` and released together;
  exactly one makes any transition (``winners`` 1), neither touches the step
  before worker-1's lease is over, and each service records each key once.
* ``waiting_for_approval``: no approval, the first run waits; the script
  approves (a fixture standing in for a person); two recovery workers race.
* ``cancel:pending`` / ``cancel:waiting_for_approval``: the person cancels
  while two workers hold what they read. ``cancel:<point>:<step>``: while
  worker-1 is held at that boundary. The person compensates, and again after
  worker-1 has finished: released under its own key, a refund owed, a sent
  mail that cannot be unsent, nothing to undo for a call never admitted,
  and an admitted call left in doubt while its lease is live.
* ``live_stale_holder:<point>:<step>``: worker-1 is FROZEN (SIGSTOP) at
  ``before_remote`` or ``admitted``, a recovery waits out its lease and
  completes the workflow, then worker-1 is thawed. Reserve and charge are
  recorded once wherever it was frozen (``effects_twice`` 0): the supplier
  refuses the late request by its fence (412), the payment service replays
  the key. Frozen before its admission, worker-1 is refused there and calls
  nothing. Frozen in the residual window before the mail, it sends a second
  message: ``mail_late_duplicates`` 1, and the probe sees it by the key
  header (``duplicate_detected_by_probe``). That case holds when the grader
  SEES the duplicate: it is the measured limit, not a guarantee.
* ``cancel:frozen:admitted:mail``: worker-1 is FROZEN (SIGSTOP, seen
  stopped in /proc) at ``admitted:mail``; the person cancels and
  compensates while its lease lives (the mail in doubt, no row), then again
  once the lease is over on the store's clock (the probe finds nothing: still
  in doubt, no row); worker-1 is thawed and mails; a last compensation's
  probe finds the message: ``cannot_undo``, and the report is true.
  ``old_rule:cancel:frozen:admitted:mail``, its negative control at the same
  barrier: compensated at once by the rule before issue 29 (a probe that
  finds nothing is ``nothing_to_undo``), a record the thawed worker's mail
  then makes false for good (``not_done: [mail]``, the provider holds it).
* ``crash_during_recovery``: worker-1 is killed in the residual window of a
  step drawn at random, then recovery workers are SIGKILLed at random
  instants of their runs (``--seed``), one of them at ``after_remote:mail``,
  before a last one runs to the end: each key once, mail included.
* Drafts, kept as mutants that hold only when the grader SEES what they do
  wrong: ``naive:before_remote:mail`` (no versions: two recovery workers both
  mail) and ``unleased:live_stale_holder:before_remote:mail`` (versions, no
  lease: a holder held after its attempt mails after its replacement).

Every count is read from rows: the supplier's ``requests`` (each POST it
decided, with its token and answer), the payment service's ``payments``,
the mail provider's ``messages``, the worker's history (``who`` made which
version) and step rows (each attempt's lease and admission). ``--quick``
runs eight cases. Exit 0 only when every case holds, else 1; an ``--output``
that exists or cannot be written is refused (exit 2) before anything runs.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

from crashcourse import store, workflow
from crashcourse.lab import experiment
from crashcourse.lab.harness import Harness
from crashcourse.services import mail, payments
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import opened, table_rows
from crashcourse.validate import check_number
from crashcourse.waiting import wait_until
from crashcourse.workers import workflow_worker
from crashcourse.workflow import steps as workflow_steps

EVIDENCE_ID = "crashcourse.ch08.workflow_recovery/2"
STEPS = workflow_worker.STEPS
POINTS = ("before_remote", "admitted", "after_remote")
KILLS = tuple(f"{point}:{step}" for step in STEPS for point in POINTS)
STALE = tuple(f"live_stale_holder:{point}:{step}" for step in STEPS
              for point in ("before_remote", "admitted"))
CANCELS = ("cancel:pending", "cancel:waiting_for_approval",
           "cancel:after_remote:reserve", "cancel:after_remote:charge",
           "cancel:before_remote:mail", "cancel:admitted:mail",
           "cancel:after_remote:mail")
CRASH = "crash_during_recovery"
NAIVE = "naive:before_remote:mail"
UNLEASED = "unleased:live_stale_holder:before_remote:mail"
FROZEN_CANCEL = "cancel:frozen:admitted:mail"
OLD_RULE = "old_rule:cancel:frozen:admitted:mail"
CASES = (*KILLS, "waiting_for_approval", *CANCELS, FROZEN_CANCEL, *STALE, CRASH,
         NAIVE, UNLEASED, OLD_RULE)
QUICK = ("after_remote:mail", "waiting_for_approval", "cancel:admitted:mail",
         FROZEN_CANCEL,
         "live_stale_holder:before_remote:mail", "live_stale_holder:admitted:mail",
         CRASH, NAIVE, UNLEASED, OLD_RULE)
FIRST, RACERS, PERSON = "worker-1", ("recovery-a", "recovery-b"), "person"
# Longer than a call's declared wait (so a call can be admitted), short
# enough that waiting out a dead holder's lease keeps a case quick.
LEASE_S = workflow_worker.CALL_WAIT_S + 2
MAX_LEASE_S = 3600.0  # an hour: longer is a typo, and a trial would wait it out
RECOVERY_KILLS = 3  # random instants a recovery is killed at (2 with --quick)
# What each cancel case must leave: step -> compensation status.
UNDONE, OWED, SENT, NOTHING = (workflow_steps.UNDONE, workflow_steps.NEEDS_PERSON,
                               workflow_steps.CANNOT_UNDO,
                               workflow_steps.NOTHING_TO_UNDO)
COMPENSATED = {
    "cancel:pending": {},
    "cancel:waiting_for_approval": {"reserve": UNDONE},
    "cancel:after_remote:reserve": {"reserve": UNDONE},
    "cancel:after_remote:charge": {"reserve": UNDONE, "charge": OWED},
    "cancel:before_remote:mail": {"reserve": UNDONE, "charge": OWED, "mail": NOTHING},
    "cancel:admitted:mail": {"reserve": UNDONE, "charge": OWED, "mail": SENT},
    "cancel:after_remote:mail": {"reserve": UNDONE, "charge": OWED, "mail": SENT},
}
APPROVED_UP_FRONT = "approval given up front by build_world, standing in for a person"


class World:
    """One case's files and supplier process, and how to start its workers."""

    def __init__(self, harness: Harness, directory: Path, approved: bool,
                 lease_s: float):
        self.harness, self.directory = harness, str(directory)
        self.lease = str(lease_s)
        built = workflow_worker.build_world(self.directory, approved=approved)
        self.id, self.paths = built["workflow_id"], built["paths"]
        self.choices = built["choices"]
        self.created = self.rows()["worker"]["workflows"][0]["choices"]
        self.url = start_supplier(harness, self.paths["supplier"]).url

    def args(self, who: str, mode: str = "versioned") -> list[str]:
        return ["-m", "crashcourse.workers.workflow_worker", "--dir", self.directory,
                "--workflow", self.id, "--who", who, "--url", self.url,
                "--mode", mode, "--lease", self.lease]

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

    def wait_for_rows(self, who: str, rows: int, worker) -> None:
        """Until ``who`` has written ``rows`` history rows, or has exited, or
        the workflow is final (bounded by ``experiment.TIMEOUT``)."""

        def there() -> bool:
            if not worker.alive():
                return True
            with opened(self.paths["workflow"]) as conn:
                history = workflow.history(conn, self.id)
            return (sum(h["who"] == who for h in history) >= rows
                    or history[-1]["to_state"] in workflow.FINAL)

        # a short interval: the rows a recovery writes take milliseconds
        wait_until(there, experiment.TIMEOUT, interval=0.002,
                   what=f"{rows} history rows by {who}, or its exit")

    def probe_mail(self) -> dict:
        """What the mail's probe says now, by the key header: found, copies."""
        remotes = workflow_worker.restock_remotes(self.paths, self.url)
        mail_step = next(c for c in json.loads(self.created) if c["step"] == "mail")
        found, seen = remotes["mail"].probe(mail_step["args"],
                                            mail_step["operation_key"])
        return {"found": found, "copies": seen["copies"]}


def interrupted(who, finished, boundary, **more) -> dict:
    return {"who": who, "pid": finished.pid, "boundary": boundary,
            "returncode": finished.returncode, **more}


def kill_case(world: World, case: str, args) -> dict:
    """SIGKILL at the boundary, then two recovery workers race."""
    mode = "unversioned" if case == NAIVE else "versioned"
    at = case.split(":", 1)[1] if case == NAIVE else case
    killed = world.interrupt(FIRST, at, mode).kill()
    return {"interrupted": interrupted(FIRST, killed, at),
            "at_interruption": world.rows(), "finished": world.race(mode),
            "fixture": [APPROVED_UP_FRONT]}


def approval_case(world: World, case: str, args) -> dict:
    """No approval: the first run waits; the script approves; a race."""
    waited = world.harness.run(world.args(FIRST), experiment.TIMEOUT)
    rows = world.rows()
    payments.approve(world.paths["payments"], **world.choices["charge"])
    return {"interrupted": interrupted(FIRST, waited, None),
            "at_interruption": rows, "finished": world.race(),
            "fixture": ["the script approves the charge, standing in for a person"]}


def cancel_case(world: World, case: str, args) -> dict:
    """The person cancels while workers hold; compensates; and again after."""
    parts = {"interrupted": None, "fixture": [
        "the script cancels and compensates, standing in for a person"]}
    at = case.split(":", 1)[1]
    if at == workflow.WAITING:
        waited = world.harness.run(world.args(FIRST), experiment.TIMEOUT)
        parts["interrupted"] = interrupted(FIRST, waited, None)
    if at not in (workflow.PENDING, workflow.WAITING):
        parts["fixture"].append(APPROVED_UP_FRONT)
        held = world.interrupt(FIRST, at)
        parts["interrupted"] = {"who": FIRST, "pid": held.pid, "held": True,
                                "boundary": at, "returncode": None}
        parts["at_interruption"] = world.rows()
        parts["cancelled_version"] = world.cancel()
        parts["while_held"] = world.compensate()  # worker-1 has not gone on yet
        held.release()  # its admission or its outcome comes after the cancel
        parts["finished"] = [(held.finish(experiment.TIMEOUT), FIRST)]
    else:
        parts["at_interruption"] = world.rows()
        parts["finished"] = world.race(between=lambda: parts.update(
            cancelled_version=world.cancel()))
        parts["while_held"] = None
    parts["compensated"] = world.compensate()
    return parts


def stale_case(world: World, case: str, args) -> dict:
    """worker-1 frozen at the boundary (SIGSTOP, or held there for the draft),
    a recovery completes the workflow meanwhile, then worker-1 goes on."""
    mode = "unleased" if case == UNLEASED else "versioned"
    at = case.split(":", 2)[2] if case == UNLEASED else case.split(":", 1)[1]
    first = world.interrupt(FIRST, at, mode)
    if mode == "versioned":
        first.freeze()  # the kernel stops it; the release waits in its pipe
        first.release()
    rows = world.rows()
    recovery = world.harness.run(world.args("recovery", mode), experiment.TIMEOUT)
    first.thaw() if mode == "versioned" else first.release()
    return {"interrupted": {"who": FIRST, "pid": first.pid, "boundary": at,
                            "pause": "SIGSTOP" if mode == "versioned" else "held",
                            "returncode": None},
            "at_interruption": rows,
            "finished": [(recovery, "recovery"),
                         (first.finish(experiment.TIMEOUT), FIRST)],
            "fixture": [APPROVED_UP_FRONT], "probe": world.probe_mail()}


def crash_case(world: World, case: str, args) -> dict:
    """worker-1 killed in a residual window; recovery workers killed at random
    instants of their runs and, while the mail is not sent, one at
    ``after_remote:mail``; then a last one finishes. A random instant is
    drawn as a number of history rows (0 to 3) the recovery may write first:
    0 kills it while it waits out a lease, more kill it part-way through its
    work, which takes milliseconds where the wait takes seconds."""
    draw = random.Random(args.seed)
    step = draw.choice(STEPS)
    killed = world.interrupt(FIRST, f"admitted:{step}").kill()
    rows = world.rows()
    kills = RECOVERY_KILLS - 1 if args.quick else RECOVERY_KILLS
    at_mail = draw.randrange(kills)  # which of them dies between mail and outcome
    recoveries = []
    for number in range(kills):
        who = f"recovery-{number}"
        if number == at_mail and not world.probe_mail()["found"]:
            worker, instant = world.interrupt(who, "after_remote:mail"), None
        else:
            worker, instant = world.harness.start(world.args(who)), draw.randrange(4)
            world.wait_for_rows(who, instant, worker)
        done = worker.kill(expect_sigkill=False)  # it may have finished first
        recoveries.append({"who": who, "pid": done.pid, "returncode": done.returncode,
                           "killed_at": "after_remote:mail" if instant is None
                           else f"after {instant} rows"})
    last = world.harness.run(world.args("recovery-last"), experiment.TIMEOUT)
    return {"interrupted": interrupted(FIRST, killed, f"admitted:{step}"),
            "at_interruption": rows, "killed_recoveries": recoveries,
            "finished": [(last, "recovery-last")], "fixture": [APPROVED_UP_FRONT],
            "seed": args.seed}


# --- compensation against a holder frozen after its admission (issue 29) ----


def stopped(pid: int) -> bool:
    """Whether /proc shows ``pid`` stopped (state T): a SIGSTOP is delivered
    when the kernel next schedules the process, not when it is sent."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] in ("T", "t")


def freeze_seen(worker) -> None:
    """SIGSTOP, then wait (bounded) until the kernel shows it stopped."""
    worker.freeze()
    wait_until(lambda: stopped(worker.pid), experiment.TIMEOUT, interval=0.005,
               what=f"worker {worker.pid} stopped (state T)")


def old_settle_step(step: dict, remote, token: tuple, at: float):
    """The rule before issue 29 (the negative control), judging at once: an
    admitted step the probe does not find is written off as nothing to undo,
    whether or not its holder may still act."""
    args, key = step["args"], step["operation_key"]
    if step["status"] == workflow_steps.DONE or remote.probe(args, key)[0]:
        return remote.undo(args, key, token)
    return ("none", NOTHING, None, "not found by the probe (the old rule)")


def compensate_old(world: World) -> dict:
    """``compensate``'s loop with ``old_settle_step``: the report after it."""
    remotes = workflow_worker.restock_remotes(world.paths, world.url)
    with opened(world.paths["workflow"]) as conn:
        token = (world.id, workflow.read(conn, world.id)["version"])
        for step in workflow_steps.progress(conn, world.id):
            if step["compensation"] or step["status"] in (
                    workflow_steps.NOT_STARTED, workflow_steps.NOT_DONE):
                continue
            action, status, undo_key, note = old_settle_step(
                step, remotes[step["step"]], token, store.now(conn))
            workflow_steps.record_compensation(
                conn, world.id, step["step"], action=action, status=status,
                note=note, who=PERSON, compensation_key=undo_key)
        return workflow_steps.final_report(conn, world.id)


def mail_lease(world: World) -> tuple[float, float]:
    """(now, end of the admitted mail attempt's lease), on the store's clock."""
    with opened(world.paths["workflow"]) as conn:
        mail_step = workflow_steps.step_of(conn, world.id, "mail")
        admitted = workflow_steps.holder(
            [a for a in mail_step["attempts"] if a["admitted_at"] is not None])
        return store.now(conn), admitted["expires"]


def wait_out_mail_lease(world: World) -> None:
    """Until the store's clock is past the admitted mail attempt's lease
    (bounded: the lease left plus ``experiment.TIMEOUT``)."""
    at, expires = mail_lease(world)
    wait_until(lambda: mail_lease(world)[0] > expires,
               max(0.0, expires - at) + experiment.TIMEOUT, interval=0.05,
               what="the store's clock past the mail attempt's lease")


def frozen_cancel_case(world: World, case: str, args) -> dict:
    """worker-1 frozen at ``admitted:mail``; the person cancels; compensates
    by the runtime's rule while the lease lives and once it is over (or, the
    negative control, at once by the old rule); worker-1 thawed and let
    finish; the person compensates again."""
    parts = {"fixture": [APPROVED_UP_FRONT, "the script cancels and compensates,"
                         " standing in for a person"]}
    held = world.interrupt(FIRST, "admitted:mail")
    try:
        freeze_seen(held)
        held.release()  # read once it runs again
        parts["interrupted"] = {"who": FIRST, "pid": held.pid, "pause": "SIGSTOP",
                                "boundary": "admitted:mail", "returncode": None}
        parts["at_interruption"] = world.rows()
        parts["cancelled_version"] = world.cancel()
        if case == OLD_RULE:
            parts["while_held"] = compensate_old(world)
            parts["after_lease"] = None
        else:
            at, expires = mail_lease(world)
            parts["while_held"] = world.compensate()
            parts["while_held_lease_left_s"] = round(expires - at, 3)
            parts["mail_lease_end"] = expires
            wait_out_mail_lease(world)
            parts["after_lease"] = world.compensate()  # worker-1 still frozen
        parts["mail_before_thaw"] = len(world.rows()["mail"])
    finally:
        held.thaw()  # before anything else, a failure included
    parts["finished"] = [(held.finish(experiment.TIMEOUT), FIRST)]
    parts["compensated"] = world.compensate()
    return parts


def records_per_key(rows: dict) -> dict[str, int]:
    """Operation key -> times a service recorded the effect: orders and
    releases the supplier created (POSTs answered 201), payments, messages.
    Only the last can exceed 1 by itself: the supplier and the payment
    service keep one row per key."""
    ops = Counter(r["operation_key"] for r in rows["supplier"]["requests"]
                  if r["method"] == "POST" and r["answer"] == 201)
    ops.update(p["key"] for p in rows["payments"])
    ops.update(m["operation_key"] for m in rows["mail"])
    return dict(ops)


def won(rows: dict, who: str, after: int) -> int:
    """Transitions ``who`` made after version ``after``, from history rows."""
    return sum(1 for r in rows["worker"]["workflow_history"]
               if r["who"] == who and r["version"] > after)


def touched_under_a_live_lease(rows: dict) -> list[dict]:
    """Writes to a step by another worker while an attempt's lease on it was
    live, from the step rows and history rows (their times are the store's
    clock, the one leases are read on). An attempt whose holder handed its
    lease back ends at that instant."""
    history = {r["version"]: r for r in rows["worker"]["workflow_history"]}
    live, found = {}, []
    for row in sorted(rows["worker"]["workflow_steps"], key=lambda r: r["version"]):
        by, at = history[row["version"]]["who"], history[row["version"]]["at"]
        held = live.get(row["step"])
        if held and held["who"] != by and at < held["expires"]:
            found.append({"step": row["step"], "version": row["version"],
                          "who": by, "held_by": held["who"]})
        live[row["step"]] = ({"who": by, "expires": row["expires"]}
                             if row["phase"] == workflow_steps.ATTEMPT else None)
    return found


def contender(finished, who: str, rows: dict, after: int) -> dict:
    """A worker that ran after the interruption: its exit, transitions won."""
    lines = finished.stdout.strip().splitlines()
    return {"who": who, "pid": finished.pid, "exit_code": finished.returncode,
            "transitions_won": won(rows, who, after),
            "report": json.loads(lines[-1]) if lines else None,
            "traceback": "Traceback" in finished.stderr}


def kind_of(case: str) -> str:
    return ("kill" if case in KILLS else "naive" if case == NAIVE
            else "unleased" if case == UNLEASED else "stale" if case in STALE
            else "crash" if case == CRASH else "cancel" if case in CANCELS
            else "frozen_cancel" if case == FROZEN_CANCEL
            else "old_rule" if case == OLD_RULE else "approval")


def run_case(harness: Harness, directory: Path, case: str, args) -> dict:
    kind = kind_of(case)
    approved = not case.endswith(workflow.WAITING)
    world = World(harness, directory, approved, args.lease)
    run = {"kill": kill_case, "naive": kill_case, "approval": approval_case,
           "cancel": cancel_case, "stale": stale_case, "unleased": stale_case,
           "crash": crash_case, "frozen_cancel": frozen_cancel_case,
           "old_rule": frozen_cancel_case}[kind]
    parts = run(world, case, args)
    after = max(r["version"] for r in parts["at_interruption"]["worker"]
                ["workflow_history"])
    final = world.rows()
    workers = [contender(done, who, final, after) for done, who in parts["finished"]]
    person = None
    if kind in ("cancel", "frozen_cancel", "old_rule"):
        person = {"who": PERSON, "fixture": True,
                  "transitions_won": won(final, PERSON, after),
                  "cancelled_version": parts["cancelled_version"]}
    return grade(case, kind, world, parts, workers, person, final)


def grade(case, kind, world, parts, workers, person, final) -> dict:
    with opened(world.paths["workflow"]) as conn:
        fate = workflow_steps.final_report(conn, world.id)
        steps = {s["step"]: s for s in workflow_steps.progress(conn, world.id)}
    keys = {step: json.loads(world.created)[n]["operation_key"]
            for n, step in enumerate(STEPS)}
    ops = records_per_key(final)
    compensation = [{k: c[k] for k in ("step", "operation_key", "action",
                                       "compensation_key", "status", "note")}
                    for c in fate["compensations"]]
    contenders = workers + ([person] if person else [])
    winners = sum(c["transitions_won"] > 0 for c in contenders)
    twice = {step: max(0, ops.get(keys[step], 0) - 1) for step in STEPS}
    by = {h["version"]: h["who"] for h in final["worker"]["workflow_history"]}
    first_attempts = [r for r in final["worker"]["workflow_steps"]
                      if r["phase"] == workflow_steps.ATTEMPT
                      and by[r["version"]] == FIRST]
    late_refused = [r["answer"] for r in final["supplier"]["requests"]
                    if r["method"] == "POST" and r["answer"] == 412]
    checks = {
        "choices_unchanged": final["worker"]["workflows"][0]["choices"]
        == world.created,
        "final_state": fate["state"] == (
            workflow.CANCELLED if kind in ("cancel", "frozen_cancel", "old_rule")
            else workflow.APPLIED),
        "no_step_touched_under_a_live_lease": kind in ("naive", "unleased")
        or not touched_under_a_live_lease(final),
    }
    if kind in ("naive", "unleased"):  # the mutants: the grader must see them fail
        checks["duplicate_mail_seen"] = ops.get(keys["mail"]) == 2
        if kind == "naive":
            checks["both_workers_wrote"] = winners == 2
    elif kind == "stale":
        point, step = case.split(":")[1:]
        residual_mail = (point, step) == ("admitted", "mail")
        checks["effects_twice_reserve_and_charge"] = (
            twice["reserve"] + twice["charge"] == 0)
        checks["holder_admitted_only_in_the_residual_window"] = (
            [r["admitted_at"] is not None for r in first_attempts
             if r["step"] == step] == [point == "admitted"])
        checks["holder_wrote_no_transition"] = won(final, FIRST, 0) == won(
            parts["at_interruption"], FIRST, 0)
        checks["mail_late_duplicates_as_predicted"] = (
            twice["mail"] == int(residual_mail))
        checks["probe_sees_every_mail"] = (
            parts["probe"]["copies"] == ops.get(keys["mail"], 0))
        if (point, step) == ("admitted", "reserve"):
            checks["late_request_refused_by_the_fence"] = late_refused == [412]
    else:
        if kind != "crash":  # there, the killed recoveries wrote too
            checks["one_winner"] = winners == 1
        checks["each_key_once"] = all(n == 1 for n in ops.values())
    if kind == "kill":
        settled = "probed" in (steps[case.split(":")[1]]["outcome"] or {})
        checks["in_doubt_settled_by_" + (
            "probe" if case.startswith("after") else "call")] = (
            settled == case.startswith("after_remote"))
    if kind == "crash":
        checks["every_key_recorded"] = set(ops) == set(keys.values())
        killed = {r["who"] for r in parts["killed_recoveries"]}
        checks["a_killed_recovery_had_written"] = any(
            h["who"] in killed for h in final["worker"]["workflow_history"])
    if kind == "approval":
        waited = parts["at_interruption"]["worker"]["workflows"][0]["state"]
        checks["waited_for_a_person"] = waited == workflow.WAITING
    if kind == "cancel":
        expected = COMPENSATED[case]
        released = [c["compensation_key"] for c in compensation
                    if c["step"] == "reserve"]
        wanted = {keys[s] for s, status in expected.items() if status != NOTHING}
        checks["every_key_recorded"] = set(ops) == wanted | set(released)
        checks["person_won"] = person["transitions_won"] == 1
        checks["compensation"] = {c["step"]: c["status"]
                                  for c in compensation} == expected
        releases = [r["operation_key"] for r in final["supplier"]["releases"]]
        checks["released_with_its_own_key"] = releases == released
        if case == "cancel:admitted:mail":  # in flight when the person first looked
            checks["in_doubt_while_its_lease_was_live"] = (
                parts["while_held"]["in_doubt"] == ["mail"]
                and "mail" not in {c["step"] for c in
                                   parts["while_held"]["compensations"]})
    if kind in ("frozen_cancel", "old_rule"):
        checks |= frozen_cancel_checks(kind, parts, compensation, final)
    return {"case": case, "kind": kind,
            "mutant": kind in ("naive", "unleased", "old_rule"),
            "residual": kind == "stale" and case.endswith("admitted:mail"),
            "interrupted": parts["interrupted"], "workers": workers,
            "person": person, "winners": winners, "records_per_key": ops,
            "effects_twice": twice, "mail_late_duplicates": twice["mail"],
            "duplicate_detected_by_probe": (parts["probe"]["copies"] > 1
                                            if "probe" in parts else None),
            "late_requests_refused": len(late_refused),
            "final_state": fate["state"], "final_report": fate,
            "compensation": compensation,
            "compensated_while_held": parts.get("while_held"),
            "compensated_after_lease": parts.get("after_lease"),
            "while_held_lease_left_s": parts.get("while_held_lease_left_s"),
            "mail_lease_end": parts.get("mail_lease_end"),
            "mail_before_thaw": parts.get("mail_before_thaw"),
            "killed_recoveries": parts.get("killed_recoveries"),
            "labels": {"fixture": parts["fixture"],
                       "measured": ["winners", "records_per_key", "effects_twice",
                                    "final_state", "compensation"]},
            "rows": {"at_interruption": parts["at_interruption"], "final": final},
            "checks": checks, "holds": all(checks.values())}


def frozen_cancel_checks(kind: str, parts: dict, compensation: list,
                         final: dict) -> dict:
    """What the frozen cancel cases must show, from the compensation rows and
    the mail provider's: the runtime's rule leaves the mail in doubt while
    its holder may act and records the sent mail once a probe finds it; the
    old rule writes ``nothing_to_undo`` that the late mail makes false."""
    fate = {c["step"]: c["status"] for c in compensation}
    sent = len(final["mail"])
    early = parts["while_held"]
    base = {"mail_sent_only_after_the_thaw": parts["mail_before_thaw"] == 0
            and sent == 1,
            "reserve_and_charge_settled": (fate.get("reserve"), fate.get("charge"))
            == (UNDONE, OWED)}
    if kind == "old_rule":  # the record is false for good
        return base | {
            "written_off_at_once": {c["step"]: c["status"] for c in
                                    early["compensations"]}.get("mail") == NOTHING,
            "record_made_false": fate.get("mail") == NOTHING
            and "mail" in parts["compensated"]["not_done"]}
    later = parts["after_lease"]
    return base | {
        # the rows it wrote (reserve's, charge's) came while the lease lived
        "in_doubt_while_its_lease_was_live": parts["while_held_lease_left_s"] > 0
        and all(c["at"] < parts["mail_lease_end"] for c in early["compensations"])
        and early["in_doubt"] == ["mail"]
        and "mail" not in {c["step"] for c in early["compensations"]},
        "in_doubt_after_the_lease_while_nothing_found": later["in_doubt"] == ["mail"]
        and "mail" not in {c["step"] for c in later["compensations"]},
        "sent_mail_found_and_recorded": fate.get("mail") == SENT
        and parts["compensated"]["in_doubt"] == []
        and "mail" not in parts["compensated"]["not_done"]}


def chosen(args) -> list[str]:
    """The cases to run: ``--cases`` (in CASES' order), else quick or all."""
    wanted = args.cases or (QUICK if args.quick else CASES)
    return [case for case in CASES if case in wanted]


def case_list(text: str) -> tuple[str, ...]:
    """``--cases``: known case names, comma-separated, else refused."""
    wanted = tuple(text.split(","))
    if unknown := sorted(set(wanted) - set(CASES)):
        raise ValueError(f"unknown cases {unknown}")
    return wanted


def run(args) -> tuple[dict, list[dict]]:
    """Every chosen case, each in a fresh world."""
    trials = experiment.run_trials(
        [experiment.Trial(case, {"case": case}, (case, args)) for case in chosen(args)],
        run_case)
    held = [t for t in trials if t["holds"]]
    return {"cases": len(trials), "held": len(held), "lease_s": args.lease,
            "winners": {t["case"]: t.get("winners") for t in trials}}, trials


def seconds(text: str) -> float:
    """The type of ``--lease``: finite seconds above a call's wait, in ASCII
    digits. ``float`` alone took ``inf``: every trial ran, then the evidence
    could not be written (JSON has no inf; issue 35)."""
    try:
        return check_number("--lease", text, workflow_worker.CALL_WAIT_S,
                            MAX_LEASE_S, low_open=True)
    except ValueError as bad:
        raise argparse.ArgumentTypeError(str(bad)) from None


def command_line():
    parser = experiment.command_line(
        __doc__, quick_help="eight cases only, what the test suite runs", seed=8)
    parser.add_argument("--cases", type=case_list, metavar="CASE,CASE", default=None,
                        help="only these cases, comma-separated (default: all,"
                        " or the quick ones)")
    parser.add_argument("--lease", type=seconds, default=LEASE_S, metavar="S",
                        help="every worker's attempt lease, above a call's"
                        f" declared wait of {workflow_worker.CALL_WAIT_S} s"
                        " (default: %(default)s)")
    return parser


main = experiment.script(__file__, evidence_id=EVIDENCE_ID, run=run,
                         parser=command_line())

if __name__ == "__main__":
    sys.exit(main())
