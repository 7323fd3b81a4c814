"""Chapter 09 checkpoint: stopping, and the person who decides.

    python checkpoints/ch09_kill_switch.py --output PATH [--quick]

Fixed cases, each in a fresh world (the 40 scans on the drive, an empty mail
provider, the 43-step restock plan, its gate at step 41, stored beside the
journal), each with real worker processes:

- ``in_band_pause``: the journal worker is held inside step 12, admitted
  (its rename about to leave), the pause flag is set, the worker goes on: it
  finishes the step it had begun and stops before step 13 with nothing in
  doubt.
- ``wedged_worker_revoked``: a worker that reads the flag only between steps
  hangs inside one, retrying renames and mails against the guarded drive and
  provider. The flag is set (its effects go on); then the credential is
  revoked at the broker: ``effects_after_revocation``, counted against each
  effect's COMMIT stamp, must be 0, and the mail it had queued before is
  still delivered.
- ``revocation_naive``: the negative control. A draft service that asks the
  broker in a transaction of its own and then writes, with its caller held
  between the two: ``revoke`` returns at once and the rename commits after
  it. The case holds when the count catches it (1 effect committed after
  the revocation).
- ``live_stale_holder`` (three variants): the journal worker, presenting
  its credential, is paused where a stop could miss it: HELD inside its
  guarded write (the broker judged the credential, the effect not yet
  written: ``revoke`` must wait until the write ends, then stamp), FROZEN
  there (SIGSTOP: ``revoke`` is refused, ``RevocationBlocked``, nothing
  revoked; the holder is killed, its write rolls back, the revocation
  completes), or FROZEN after its journal admission at step 42, the mail
  (chapter 07's residual window: the revocation completes at once, a person
  grants the holder again and resumes, the frozen holder is thawed and its
  late mail refused). In each: effects committed under the old credential
  after the revocation, 0, and no step twice, from the services' rows.
- ``scheduler_stays_stopped``: a scheduler process starts runs, is stopped,
  killed and started again, and a scheduler on a file nobody ever switched
  on runs too: ``runs_started_while_stopped`` must be 0.
- ``notification_ack_gap``: the payment worker is killed after the provider
  accepted the owner's notification and before it recorded that; the
  resumed worker asks by key: ``notifications_sent`` must be 1.
- ``resume``: after a kill, the person's resume (a real process) re-runs the
  gates and finishes; after a stop past the gate, a file filed under a
  planned name makes the same resume refuse, with no mail sent.
- ``unwind``: killed after the first summary was accepted, and one renamed
  file renamed again by its owner since; every other rename is restored
  from ``before_state`` under keys of its own, the owner's change is left as
  found (a compare-and-set restore), the mail becomes a compensation record,
  and a resume is refused afterwards.
- ``daylight``: killed with the second summary in doubt; the hand-over
  revokes the holder and says so; overnight a scheduler, the hand-over's
  command and a worker started by hand with the old credential (the flag
  lifted) all do nothing, the last refused by the provider; in the morning a
  person grants the holder again and the command, run as written, finishes
  the task once.

Every count is read from durable rows: the journal's, the services', the
broker's and the runtime's switches. ``--quick`` runs the same cases with
shorter loops. Exit 0 only when every case holds, else 1; exit 2 for bad
usage or an ``--output`` that exists or cannot be written (refused before
anything runs).
"""

from __future__ import annotations

import inspect
import shlex
import sys
import threading
from pathlib import Path

from crashcourse import control, journal
from crashcourse.boundary import boundary
from crashcourse.journal import decisions
from crashcourse.lab import experiment
from crashcourse.lab.example import restock_plan
from crashcourse.lab.harness import Harness, Moments
from crashcourse.services import broker, drive, mail, payments
from crashcourse.store import opened, write_lock_free
from crashcourse.waiting import wait_until, waits_in
from crashcourse.workers import paying
from crashcourse.workers.journal_worker import (
    REFUSED,
    SCOPE,
    build_world,
    paths,
    restock_actions,
    resume_command,
)
from crashcourse.workers.scheduler import ticks_of

EVIDENCE_ID = "crashcourse.ch09.kill_switch/2"
PLAN = restock_plan()
GATE, FIRST_MAIL = 41, 42
JOURNAL_WORKER = ("-m", "crashcourse.workers.journal_worker")
HOLDER = "journal-worker"  # the journal worker's --owner: claim and credential
LEASE = ("--ttl", "1", "--wait", "0.25")  # short, so a frozen lease runs out soon
SCANS = {f"f{i:03d}": f"scan-{i:03d}.pdf" for i in range(1, 41)}
IN_WRITE = f"{drive.RENAME}:admitted"  # inside the guarded write, judged


def new_world(folder: Path, guarded: bool = False) -> dict:
    folder.mkdir(parents=True, exist_ok=True)  # the case's own, or one inside it
    where = {**paths(str(folder)), "broker": str(folder / "broker.sqlite"),
             "dir": str(folder)}
    if guarded:
        broker.install(where["broker"])
    where["task"] = build_world(str(folder), PLAN,
                                broker=where["broker"] if guarded else None)
    return where


def worker_args(world: dict, *extra: str) -> list[str]:
    return [*JOURNAL_WORKER, "--dir", world["dir"], "--task", world["task"], *extra]


def rows(world: dict) -> dict:
    """The durable rows a case is judged from: journal, decisions, switches and
    the services' own records (and the broker's, for a guarded world)."""
    with opened(world["journal"]) as conn:
        status = journal.journal_status(conn, world["task"], PLAN)
        found = {"journal": status.summary(), "last_row": status.last_row,
                 "entries": journal.entries(conn, world["task"]),
                 "decisions": decisions.history(conn, world["task"]),
                 "unwinds": decisions.unwinds(conn, world["task"]),
                 "control": control.snapshot(conn)}
    found |= {"drive": drive.snapshot(world["drive"]),
              "mail": mail.snapshot(world["mail"])}
    if Path(world["broker"]).exists():
        found["broker"] = broker.snapshot(world["broker"])
    return found


def summary_rows(found: dict) -> dict:
    """Counts for the trial's face; the rows themselves sit beside them."""
    return {"journal": found["journal"],
            "rename_requests": len(found["drive"]["rename_requests"]),
            "messages": len(found["mail"]["messages"]),
            "duplicate_renames": duplicates(found["drive"]["rename_requests"]),
            "mails_twice": mails_twice(found["mail"]["messages"]),
            "decisions": [d["decision"] for d in found["decisions"]]}


def duplicates(requests: list[dict]) -> int:
    pairs = [(r["file_id"], r["name"]) for r in requests
             if r["requester"] == "assistant"]
    return len(pairs) - len(set(pairs))


def mails_twice(messages: list[dict]) -> int:
    keys = [m["operation_key"] for m in messages]
    return len(keys) - len(set(keys))


def committed_after(found: dict, token: str, since: float) -> int:
    """Effects under ``token`` whose COMMIT stamp is at or after ``since``:
    the drive's ``committed_at``, the provider's ``accepted_at``."""
    return (sum(r["credential"] == token and r["committed_at"] >= since
                for r in found["drive"]["rename_requests"])
            + sum(m["credential"] == token and m["accepted_at"] >= since
                  for m in found["mail"]["messages"]))


def refusals(found: dict) -> list[tuple[str, str]]:
    return [(r["credential"], r["reason"])
            for r in found["drive"]["refusals"] + found["mail"]["refusals"]]


def killed_at(harness: Harness, world: dict, boundary_name: str, *extra) -> int:
    worker = harness.start(worker_args(world, *extra), stop_at=boundary_name)
    worker.wait_for_boundary(experiment.TIMEOUT)
    return worker.kill().returncode


def verdict(case: str, checks: dict, **fields) -> dict:
    return {"case": case, "holds": all(checks.values()), "checks": checks, **fields}


# --- the in-band stop -------------------------------------------------------------


def in_band_pause(harness: Harness, folder: Path, quick: bool) -> dict:
    world, moments = new_world(folder), Moments()  # the parent's instants
    worker = harness.start(worker_args(world), stop_at="step-12:admitted")
    worker.wait_for_boundary(experiment.TIMEOUT)
    moments.mark("at step-12:admitted")
    with opened(world["journal"]) as conn:
        control.set_paused(conn, True)
    moments.mark("paused")
    worker.release()
    finished = worker.finish(experiment.TIMEOUT)
    moments.mark(f"exit {finished.returncode}")
    found = rows(world)
    paused_at = found["control"]["runtime_control"][0]["changed_at"]
    after = [r["file_id"] for r in found["drive"]["rename_requests"]
             if r["committed_at"] >= paused_at]
    checks = {
        "nothing_in_doubt": found["journal"]["in_doubt"] == 0,
        "stopped_at_the_next_boundary": found["journal"]["confirmed"] == 12,
        # the one step already begun when the flag was set, and nothing else
        "only_the_step_in_flight_after_the_pause": after == ["f012"],
        "no_mail": found["mail"]["messages"] == [],
    }
    return verdict("in_band_pause", checks, effects_after_pause=len(after),
                   returncode=finished.returncode, counts=summary_rows(found),
                   rows=found, moments=moments)


# --- the out-of-band stop ---------------------------------------------------------


def wedged_worker_revoked(harness: Harness, folder: Path, quick: bool) -> dict:
    world = new_world(folder, guarded=True)
    token = broker.issue(world["broker"], "assistant", SCOPE, 120.0)
    wanted = 10 if quick else 40
    worker = harness.start(["-m", "crashcourse.workers.wedged_worker",
                            "--drive", world["drive"], "--mail", world["mail"],
                            "--runtime", world["journal"], "--credential", token])
    wait_until(lambda: committed_after(rows(world), token, 0.0) >= wanted,
               experiment.TIMEOUT, what="the loop's effects")
    with opened(world["journal"]) as conn:
        control.set_paused(conn, True)
        paused_at = control.runtime(conn)["changed_at"]
    wait_until(lambda: committed_after(rows(world), token, paused_at) >= wanted,
               experiment.TIMEOUT, what="effects after the flag")
    revoked_at = broker.revoke(world["broker"], token, "night-owner")
    finished = worker.finish(experiment.TIMEOUT)
    before_delivery = rows(world)
    queued = [m for m in before_delivery["mail"]["messages"]
              if m["status"] == mail.QUEUED]
    mail.tick(world["mail"])  # the provider's later delivery
    found = rows(world)
    [revocation] = found["broker"]["revocations"]
    delivered = [m for m in found["mail"]["messages"]
                 if m["message_id"] in {q["message_id"] for q in queued}
                 and m["status"] == mail.SENT
                 and m["accepted_at"] < revocation["revoked_at"] < m["sent_at"]]
    after_revocation = committed_after(found, token, revocation["revoked_at"])
    checks = {
        "revoke_returned_its_row": revoked_at == revocation["revoked_at"],
        "no_effect_committed_after_revocation": after_revocation == 0,
        "refused_for_revocation": refusals(found) == [(token, broker.REVOKED)],
        "accepted_before_is_still_delivered": len(delivered) == len(queued) > 0,
    }
    return verdict(
        "wedged_worker_revoked", checks, effects_after_revocation=after_revocation,
        flag_alone={"effects_after_flag": committed_after(found, token, paused_at),
                    "paused_at": paused_at},
        revoked_at=revocation["revoked_at"], queued_at_revocation=len(queued),
        delivered_after_revocation=len(delivered), returncode=finished.returncode,
        counts=summary_rows(found), rows=found)


def rename_checked_naive(drive_path: str, broker_path: str, file_id: str,
                         name: str, credential: str) -> dict:
    """DRAFT, never in src/: the service asks the broker in a transaction of
    its own, then writes the rename in another (the first edition's drive)."""
    broker.verify(broker_path, credential, drive.RENAME)  # its own BEGIN..COMMIT
    boundary("verified")  # the caller paused here: no lock is held
    return drive.rename_to(drive_path, file_id, name)  # an unguarded drive


NAIVE_CHILD = """
import sys
from crashcourse.boundary import boundary
from crashcourse.services import broker, drive
{source}
rename_checked_naive(*sys.argv[1:])
"""


def revocation_naive(harness: Harness, folder: Path, quick: bool) -> dict:
    broker_path = str(folder / "broker.sqlite")
    drive_path = str(folder / "drive.sqlite")
    broker.install(broker_path)
    drive.install(drive_path, {"f001": "scan-001.pdf"})
    token = broker.issue(broker_path, "assistant", drive.RENAME, 60.0)
    child = NAIVE_CHILD.format(source=inspect.getsource(rename_checked_naive))
    holder = harness.start(["-c", child, drive_path, broker_path, "f001",
                            "late.pdf", token], stop_at="verified")
    holder.wait_for_boundary(experiment.TIMEOUT)
    moments = Moments()  # the parent's instants, for the picture
    moments.mark("holder at verified")
    revoked_at = broker.revoke(broker_path, token, "night-owner")  # at once
    moments.mark("revoked")
    holder.release()
    finished = holder.finish(experiment.TIMEOUT)
    moments.mark(f"holder exit {finished.returncode}")
    found = {"drive": drive.snapshot(drive_path),
             "broker": broker.snapshot(broker_path)}
    late = [r for r in found["drive"]["rename_requests"]
            if r["committed_at"] >= revoked_at]
    checks = {
        # the count this chapter takes can fail: here it must catch the draft
        "the_count_catches_the_late_commit": len(late) == 1,
        "the_revocation_was_recorded": len(found["broker"]["revocations"]) == 1,
    }
    return verdict("revocation_naive", checks,
                   effects_committed_after_revocation=len(late),
                   returncode=finished.returncode, rows=found, moments=moments)


def revoke_in_background(world: dict) -> tuple[threading.Thread, dict]:
    """``broker.revoke_holder`` in a thread; what it returned or raised."""
    outcome: dict = {}

    def run():
        try:
            outcome["stopped"] = broker.revoke_holder(
                world["broker"], HOLDER, "night-owner",
                wait_ms=int(experiment.TIMEOUT * 1000))  # bounded by the trial's
        except broker.RevocationBlocked as blocked:
            outcome["blocked"] = str(blocked)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def replace_holder(harness: Harness, world: dict) -> object:
    """A person grants the holder again; the resume asks for a new credential."""
    broker.grant(world["broker"], HOLDER, "day-owner")
    return harness.run(worker_args(world, "--broker", world["broker"],
                                   "--resume-by", "day-owner", *LEASE),
                       experiment.TIMEOUT)


def live_stale_holder(harness: Harness, folder: Path, quick: bool,
                      variant: str) -> dict:
    """The holder paused where a stop could miss it; see the module's doc."""
    world = new_world(folder, guarded=True)
    token = broker.issue(world["broker"], HOLDER, SCOPE, 300.0)
    presents = ("--credential", token, *LEASE)
    if variant == "held_in_write":
        # A boundary holds every time it is passed: let the run reach its LAST
        # rename first (killed before step 40), so the hold comes once.
        killed_at(harness, world, "step-40:before_intent", *presents)
        with opened(world["journal"]) as conn:
            journal.wait_out(conn, world["task"])
    stop_at = (IN_WRITE if variant.endswith("in_write")
               else f"step-{FIRST_MAIL}:admitted")
    holder = harness.start(worker_args(world, *presents), stop_at=stop_at)
    holder.wait_for_boundary(experiment.TIMEOUT)
    seen: dict = {}
    if variant == "held_in_write":
        seen["the_held_write_holds_the_brokers_lock"] = not write_lock_free(
            world["broker"])
        thread, outcome = revoke_in_background(world)
        # where the revocation is, not how long it took (issue 36): seen
        # waiting at the broker's BEGIN IMMEDIATE, which the held write holds
        wait_until(lambda: not thread.is_alive() or waits_in(
            thread, "begin_write", "_revoking"), experiment.TIMEOUT,
            what="the revocation at the broker's lock")
        seen["revoke_waited_for_the_write"] = thread.is_alive()
        seen["it_cannot_have_passed_the_lock"] = not write_lock_free(world["broker"])
        seen["nothing_revoked_while_it_waited"] = (
            broker.snapshot(world["broker"])["revocations"] == [])
        holder.release()
        thread.join(timeout=experiment.TIMEOUT)
        seen["holder_returncode"] = holder.finish(experiment.TIMEOUT).returncode
        revoked_at = outcome["stopped"]["revoked_at"]
    elif variant == "frozen_in_write":
        holder.freeze()
        try:
            broker.revoke_holder(world["broker"], HOLDER, "night-owner", wait_ms=500)
            seen["refused_while_frozen"] = False
        except broker.RevocationBlocked:
            seen["refused_while_frozen"] = True
        seen["nothing_revoked_while_frozen"] = (
            broker.snapshot(world["broker"])["revocations"] == [])
        seen["holder_returncode"] = holder.kill().returncode  # rolls its write back
        revoked_at = broker.revoke_holder(world["broker"], HOLDER,
                                          "night-owner")["revoked_at"]
    else:  # frozen after its admission: chapter 07's residual window
        holder.freeze()
        revoked_at = broker.revoke_holder(world["broker"], HOLDER,
                                          "night-owner")["revoked_at"]
    replaced = replace_holder(harness, world)
    if variant == "frozen_after_admission":
        holder.thaw()
        holder.release()
        seen["holder_returncode"] = holder.finish(experiment.TIMEOUT).returncode
    found = rows(world)
    late = committed_after(found, token, revoked_at)
    counts = summary_rows(found)
    checks = {
        **{name: ok for name, ok in seen.items() if isinstance(ok, bool)},
        "no_effect_committed_after_revocation": late == 0,
        "the_replacement_finished": found["journal"]["confirmed"] == len(PLAN.steps),
        "no_rename_twice": counts["duplicate_renames"] == 0,
        "no_mail_twice": counts["mails_twice"] == 0
        and len(found["mail"]["messages"]) == 2,
    }
    if variant == "held_in_write":  # the write it held committed before
        checks["the_held_write_committed_before_the_stamp"] = any(
            r["file_id"] == "f040" and r["credential"] == token
            and r["committed_at"] < revoked_at
            for r in found["drive"]["rename_requests"])
    elif variant == "frozen_in_write":  # killed inside its write: rolled back
        checks["the_frozen_write_rolled_back"] = not any(
            r["credential"] == token for r in found["drive"]["rename_requests"])
    else:  # its late request met the revocation, at the service
        checks["its_late_request_refused"] = refusals(found) == [
            (token, broker.REVOKED)]
    return verdict("live_stale_holder", checks, variant=variant,
                   effects_committed_after_revocation=late, revoked_at=revoked_at,
                   returncodes={"holder": seen["holder_returncode"],
                                "replacement": replaced.returncode},
                   counts=counts, rows=found)


# --- staying stopped --------------------------------------------------------------


def scheduler_stays_stopped(harness: Harness, folder: Path, quick: bool) -> dict:
    state, fresh = folder / "runtime.sqlite", folder / "fresh.sqlite"
    ticks = "10" if quick else "40"

    def scheduler(path: Path, name: str, count: str = "100000") -> list[str]:
        return ["-m", "crashcourse.workers.scheduler", "--state", str(path),
                "--name", name, "--ticks", count, "--interval", "0.01"]

    def runs() -> list[dict]:
        with opened(state) as conn:
            return control.snapshot(conn)["runs"]

    with opened(state) as conn:
        control.start_scheduler(conn, "day-owner")
    first = harness.start(scheduler(state, "first"))
    wait_until(lambda: len(runs()) >= 3, experiment.TIMEOUT,
               what="runs while allowed")
    with opened(state) as conn:
        stop = control.stop_scheduler(conn, "night-owner", "run 122 went wrong")
        stopped_at = next(s["at"] for s in control.snapshot(conn)["scheduler_switch"]
                          if s["seq"] == stop)

    def ticks_after_stop() -> int:
        with opened(state) as conn:
            return len(ticks_of(conn, "first", stopped_at))

    # the first scheduler ticks on, stopped, before its kill: three ticks
    # recorded after the stop (issue 36: was a 0.1 s sleep, which on a loaded
    # machine can hold no tick, and then the check could not fail)
    wait_until(lambda: ticks_after_stop() >= 3, experiment.TIMEOUT,
               what="three ticks of the first scheduler after the stop")
    first.kill()
    restarted = harness.run(scheduler(state, "restarted", ticks), experiment.TIMEOUT)
    untouched = harness.run(scheduler(fresh, "fresh", ticks), experiment.TIMEOUT)
    with opened(state) as conn:
        found = control.snapshot(conn)
    with opened(fresh) as conn:
        found_fresh = control.snapshot(conn)
    while_stopped = [r for r in found["runs"] if r["started_at"] >= stopped_at]
    checks = {
        "it_ticked_on_after_the_stop": ticks_after_stop() >= 3,
        "none_while_stopped": while_stopped == [],
        "none_where_nobody_looked": found_fresh["runs"] == [],
        "every_run_allowed_by_a_person": {r["allowed_by"] for r in found["runs"]}
        <= {s["seq"] for s in found["scheduler_switch"] if s["state"] == "running"},
    }
    return verdict("scheduler_stays_stopped", checks,
                   runs_started_while_stopped=len(while_stopped),
                   runs_started_on_a_fresh_file=len(found_fresh["runs"]),
                   runs_before_the_stop=len(found["runs"]),
                   returncodes={"restarted": restarted.returncode,
                                "fresh": untouched.returncode},
                   rows={"runtime": found, "fresh": found_fresh})


def notification_ack_gap(harness: Harness, folder: Path, quick: bool) -> dict:
    service, state = folder / "payments.sqlite", folder / "worker.sqlite"
    mail_path = folder / "mail.sqlite"
    payments.install(service)
    payments.approve(service, "SUP-0042", 4000, "USD")
    mail.install(mail_path)
    args = ["-m", "crashcourse.workers.pay_invoice", "--payments", str(service),
            "--state", str(state), "--task", "restock-0042", "--order", "SUP-0042",
            "--amount", "4000", "--currency", "USD", "--notify", str(mail_path)]

    def found() -> dict:
        with opened(state) as conn:
            notes = paying.notifications(conn)
        return {**paying.snapshot(service, state), "notifications": notes,
                "mail": mail.snapshot(mail_path)}

    moments = Moments()  # the parent's instants, for the picture
    worker = harness.start(args, stop_at="after_notify_accepted")
    worker.wait_for_boundary(experiment.TIMEOUT)
    moments.mark("at after_notify_accepted")
    worker.kill()
    moments.mark("killed")
    at_kill = found()
    moments.mark("start")
    resumed = harness.run(args, experiment.TIMEOUT)
    moments.mark(f"exit {resumed.returncode}")
    final = found()
    [note] = final["notifications"]
    sent = [m for m in final["mail"]["messages"]
            if m["operation_key"] == note["operation_key"]]
    checks = {
        "paid_not_notified_at_kill": len(at_kill["checkpoints"]) == 1
        and [n["state"] for n in at_kill["notifications"]] == [paying.PENDING],
        "provider_had_it_at_kill": len(at_kill["mail"]["messages"]) == 1,
        "one_notification": len(sent) == 1,
        "settled_by_the_probe": (note["state"], note["settled_by"]) == (
            paying.NOTIFIED, paying.PROBED),
        "one_payment": len(final["payments"]) == 1,
    }
    return verdict("notification_ack_gap", checks, notifications_sent=len(sent),
                   resumed_returncode=resumed.returncode,
                   rows={"at_kill": at_kill, "final": final}, moments=moments)


# --- the person's decisions -------------------------------------------------------


def resume(harness: Harness, folder: Path, quick: bool) -> dict:
    world = new_world(folder / "killed")
    killed_at(harness, world, "step-20:after_action", *LEASE)
    done = harness.run(worker_args(world, "--resume-by", "day-owner"),
                       experiment.TIMEOUT)
    found = rows(world)
    # a second world: stopped after the gate passed, then the drive changes
    gated = new_world(folder / "gate")
    worker = harness.start(worker_args(gated), stop_at=f"step-{GATE}:after_outcome")
    worker.wait_for_boundary(experiment.TIMEOUT)
    with opened(gated["journal"]) as conn:
        control.set_paused(conn, True)
    worker.release()
    worker.finish(experiment.TIMEOUT)
    drive.install(gated["drive"], {"supplier-7": "invoice-2026-007.pdf"}, "supplier")
    refused = harness.run(worker_args(gated, "--resume-by", "day-owner"),
                          experiment.TIMEOUT)
    refused_rows = rows(gated)
    [decided] = found["decisions"] or [None]
    counts = summary_rows(found)
    checks = {
        "resumed_to_the_end": found["journal"]["confirmed"] == len(PLAN.steps),
        "gates_rechecked_first": decided is not None
        and decided["detail"]["gates_passed"] == [GATE],
        "nothing_twice": counts["duplicate_renames"] == counts["mails_twice"] == 0
        and len(found["mail"]["messages"]) == 2,
        "failed_gate_refuses": refused.returncode == REFUSED
        and refused_rows["decisions"] == [],
        "refused_resume_sent_nothing": refused_rows["mail"]["messages"] == []
        and refused_rows["journal"]["confirmed"] == GATE,
    }
    return verdict("resume", checks, counts=counts,
                   refused_counts=summary_rows(refused_rows),
                   returncodes={"resumed": done.returncode,
                                "refused": refused.returncode},
                   rows={"resumed": found, "refused": refused_rows})


def unwind(harness: Harness, folder: Path, quick: bool) -> dict:
    world = new_world(folder)
    killed_at(harness, world, f"step-{FIRST_MAIL}:after_action", *LEASE)
    # Since the run, the shop's owner renamed one of the files it renamed.
    drive.rename_to(world["drive"], "f007", "kept-by-the-owner.pdf", "owner")
    with opened(world["journal"]) as conn:
        undone = decisions.unwind(conn, world["task"],
                                  restock_actions(world["drive"], world["mail"]),
                                  who="night-owner")
    after = harness.run(worker_args(world, "--resume-by", "day-owner"),
                        experiment.TIMEOUT)
    found = rows(world)
    keys = {e["operation_key"] for e in found["entries"]}
    files = {f["file_id"]: f["name"] for f in found["drive"]["files"]}
    checks = {
        "every_other_rename_restored": files == {**SCANS,
                                                 "f007": "kept-by-the-owner.pdf"},
        "the_owners_change_left_as_found": undone[decisions.LEFT] == [7],
        "restores_newest_first": undone[decisions.RESTORE] == [
            n for n in range(40, 0, -1) if n != 7],
        "sent_mail_is_compensation": undone[decisions.COMPENSATION] == [FIRST_MAIL]
        and [u["step"] for u in found["unwinds"]
             if u["kind"] == decisions.COMPENSATION] == [FIRST_MAIL],
        "undo_keys_are_their_own": keys.isdisjoint(
            u["operation_key"] for u in found["unwinds"]),
        "mail_not_unsent": len(found["mail"]["messages"]) == 1,
        "resume_refused_after_unwind": after.returncode == REFUSED
        and [d["decision"] for d in found["decisions"]] == ["unwind"],
    }
    return verdict("unwind", checks, unwound=undone, counts=summary_rows(found),
                   rows=found)


def daylight(harness: Harness, folder: Path, quick: bool) -> dict:
    world = new_world(folder, guarded=True)
    with opened(world["journal"]) as conn:
        control.start_scheduler(conn, "day-owner")
    killed_at(harness, world, f"step-{FIRST_MAIL + 1}:after_intent",
              "--broker", world["broker"], *LEASE)
    [night_token] = [c["token"] for c in broker.snapshot(world["broker"])[
        "credentials"] if c["holder"] == HOLDER]
    handover = folder / "handover.md"
    command = resume_command(world["dir"], world["task"], "day-owner",
                             world["broker"])
    with opened(world["journal"]) as conn:
        decisions.hand_to_daylight(conn, world["task"], who="night-owner",
                                   reason="a second summary in doubt at 03:14",
                                   resume_command=command, path=str(handover),
                                   broker=world["broker"], holder=HOLDER)
    at_handover = rows(world)
    written = handover.read_text().split("```")[1].strip()
    night = {"scheduler": harness.run(["-m", "crashcourse.workers.scheduler",
                                       "--state", world["journal"], "--name",
                                       "night", "--ticks", "10", "--interval",
                                       "0.01"], experiment.TIMEOUT),
             "the_command": harness.run(shlex.split(written)[1:],
                                        experiment.TIMEOUT)}
    with opened(world["journal"]) as conn:  # someone lifts the in-band stop ...
        control.set_paused(conn, False)
        journal.wait_out(conn, world["task"])  # ... once the killed lease is over
    night["by_hand"] = harness.run(worker_args(world, "--credential", night_token,
                                               *LEASE), experiment.TIMEOUT)
    overnight = rows(world)
    broker.grant(world["broker"], HOLDER, "day-owner")  # the morning's person
    morning = harness.run(shlex.split(written)[1:], experiment.TIMEOUT)
    found = rows(world)
    [decided] = at_handover["decisions"]
    revoked_at = decided["detail"]["revoked_at"]
    checks = {
        "handover_names_the_step_in_doubt":
            decided["detail"]["in_doubt"]["step"] == FIRST_MAIL + 1,
        "handover_lists_the_sent_mail": [
            e["step"] for e in decided["detail"]["irreversible_done"]] == [FIRST_MAIL],
        "handover_revoked_the_holder": decided["detail"]["revoked"] == [night_token]
        and [r["token"] for r in at_handover["broker"]["revocations"]]
        == [night_token],
        "file_holds_the_exact_command": written == shlex.join(command),
        "no_run_overnight": overnight["control"]["runs"] == [],
        "no_credential_issued_overnight": overnight["broker"]["credentials"]
        == at_handover["broker"]["credentials"],
        "the_services_refused_the_old_credential": refusals(overnight) == [
            (night_token, broker.REVOKED)],
        "nothing_committed_after_the_revocation":
            committed_after(overnight, night_token, revoked_at) == 0
            and len(overnight["mail"]["messages"]) == 1,
        "the_command_finishes_once": found["journal"]["confirmed"] == len(PLAN.steps)
        and len(found["mail"]["messages"]) == 2
        and mails_twice(found["mail"]["messages"]) == 0,
    }
    return verdict("daylight", checks, handover=decided["detail"],
                   effects_committed_overnight=committed_after(
                       overnight, night_token, revoked_at),
                   returncodes={**{k: v.returncode for k, v in night.items()},
                                "morning": morning.returncode},
                   counts=summary_rows(found),
                   rows={"at_handover": at_handover, "overnight": overnight,
                         "final": found})


CASES = [
    ("in_band_pause", in_band_pause, None),
    ("wedged_worker_revoked", wedged_worker_revoked, None),
    ("revocation_naive", revocation_naive, None),
    *[("live_stale_holder", live_stale_holder, variant) for variant in (
        "held_in_write", "frozen_in_write", "frozen_after_admission")],
    ("scheduler_stays_stopped", scheduler_stays_stopped, None),
    ("notification_ack_gap", notification_ack_gap, None),
    ("resume", resume, None),
    ("unwind", unwind, None),
    ("daylight", daylight, None),
]


def trial(name: str, case, variant: str | None, quick: bool) -> experiment.Trial:
    """One row of ``CASES``, to run as ``case(harness, folder, quick[, variant])``."""
    if variant is None:
        return experiment.Trial(name, {"case": name}, (case, quick))
    return experiment.Trial(f"{name}:{variant}", {"case": name, "variant": variant},
                            (case, quick, variant))


def run_case(harness: Harness, folder: Path, case, *more) -> dict:
    return case(harness, folder, *more)


def run(args) -> tuple[dict, list[dict]]:
    """The cases in order, each in its own folder and world."""
    trials = experiment.run_trials([trial(*row, args.quick) for row in CASES],
                                   run_case)

    def measured(case: str, field: str):
        return [t.get(field) for t in trials if t["case"] == case]

    return {"cases": len(trials), "held": sum(t["holds"] for t in trials),
            "effects_after_revocation": measured("wedged_worker_revoked",
                                                 "effects_after_revocation")[0],
            "effects_after_revocation_naive": measured(
                "revocation_naive", "effects_committed_after_revocation")[0],
            "effects_after_revocation_stale_holder": measured(
                "live_stale_holder", "effects_committed_after_revocation"),
            "runs_started_while_stopped": measured("scheduler_stays_stopped",
                                                   "runs_started_while_stopped")[0],
            "effects_committed_overnight": measured(
                "daylight", "effects_committed_overnight")[0],
            "notifications_sent": measured("notification_ack_gap",
                                           "notifications_sent")[0]}, trials


main = experiment.script(
    __file__, evidence_id=EVIDENCE_ID, run=run, parser=experiment.command_line(
        __doc__, quick_help="the same cases with shorter loops, what the test "
        "suite runs"))

if __name__ == "__main__":
    sys.exit(main())
