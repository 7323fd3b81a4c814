"""Chapter 09 checkpoint: stopping, and the person who decides.

    python checkpoints/ch09_kill_switch.py --output PATH [--quick]

Seven fixed cases, each in a fresh world (the 40 scans on the drive, an
empty mail provider, the 43-step restock plan, its gate at step 41, stored
beside the journal), each with real worker processes:

- ``in_band_pause``: the journal worker is held inside step 12, admitted
  (its rename about to leave), the pause flag is set, the worker goes on: it
  finishes the step it had begun and stops before step 13 with nothing in
  doubt. (Held before its admission, it would withdraw step 12 instead: the
  flag refuses an admission, chapter 07.)
- ``wedged_worker_revoked``: a worker that never reads the flag loops on the
  guarded drive and mail provider. The flag is set (its effects go on); then
  the credential is revoked at the broker (``effects_after_revocation`` must
  be 0), and the mail it had queued before is still delivered.
- ``scheduler_stays_stopped``: a scheduler process starts runs, is stopped,
  killed and started again, and a scheduler on a file nobody ever switched
  on runs too: ``runs_started_while_stopped`` must be 0.
- ``notification_ack_gap``: the payment worker is killed after the provider
  accepted the owner's notification and before it recorded that; the
  resumed worker asks by key: ``notifications_sent`` must be 1.
- ``resume``: after a kill, the person's resume (a real process) re-runs the
  gates and finishes; after a stop past the gate, a file filed under a
  planned name makes the same resume refuse, with no mail sent.
- ``unwind``: killed after the first summary was accepted; every rename is
  restored from ``before_state`` under keys of its own, the mail becomes a
  compensation record, and a resume is refused afterwards.
- ``daylight``: killed with the second summary in doubt; the hand-over says
  so, the runtime stays stopped (a scheduler and a plain worker do nothing),
  and the hand-over's command, run as written, finishes the task once.

Every count is read from durable rows: the journal's, the services', the
broker's and the runtime's switches. ``--quick`` runs the same seven cases
with shorter loops. Exit 0 only when every case holds, else 1; exit 2 for bad
usage or an ``--output`` that exists or cannot be written (refused before
anything runs).
"""

from __future__ import annotations

import shlex
import sys
import tempfile
import time
from pathlib import Path

from crashcourse import control, decisions, evidence, experiment, journal
from crashcourse.example import restock_plan
from crashcourse.harness import Harness
from crashcourse.services import broker, drive, mail, payments
from crashcourse.store import opened
from crashcourse.workers import paying
from crashcourse.workers.journal_worker import (
    REFUSED,
    build_world,
    paths,
    restock_actions,
    resume_command,
)

SCHEMA = "crashcourse.ch09.kill_switch/1"
PLAN = restock_plan()
GATE, FIRST_MAIL = 41, 42
JOURNAL_WORKER = ("-m", "crashcourse.workers.journal_worker")
SCOPE = "drive:rename mail:submit"
SCANS = {f"f{i:03d}": f"scan-{i:03d}.pdf" for i in range(1, 41)}


def wait_until(predicate, what: str) -> None:
    """Poll durable rows until ``predicate`` holds, bounded by the one timeout."""
    deadline = time.monotonic() + experiment.TIMEOUT
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"never saw {what} within {experiment.TIMEOUT} s")
        time.sleep(0.02)


def new_world(folder: Path, guarded: bool = False) -> dict:
    folder.mkdir(parents=True)
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
    the services' own records."""
    with opened(world["journal"]) as conn:
        status = journal.journal_status(conn, world["task"], PLAN)
        found = {"journal": status.summary(), "last_row": status.last_row,
                 "entries": journal.entries(conn, world["task"]),
                 "decisions": decisions.history(conn, world["task"]),
                 "unwinds": decisions.unwinds(conn, world["task"]),
                 "control": control.snapshot(conn)}
    return {**found, "drive": drive.snapshot(world["drive"]),
            "mail": mail.snapshot(world["mail"])}


def summary_rows(found: dict) -> dict:
    """Counts for the trial's face; the rows themselves sit beside them."""
    return {"journal": found["journal"],
            "rename_requests": len(found["drive"]["rename_requests"]),
            "messages": len(found["mail"]["messages"]),
            "duplicate_renames": duplicates(found["drive"]["rename_requests"]),
            "decisions": [d["decision"] for d in found["decisions"]]}


def duplicates(requests: list[dict]) -> int:
    pairs = [(r["file_id"], r["name"]) for r in requests]
    return len(pairs) - len(set(pairs))


def killed_at(harness: Harness, world: dict, boundary: str) -> int:
    worker = harness.start(worker_args(world), stop_at=boundary)
    worker.wait_for_boundary(experiment.TIMEOUT)
    return worker.kill().returncode


def verdict(case: str, checks: dict, **fields) -> dict:
    return {"case": case, "holds": all(checks.values()), "checks": checks, **fields}


# --- the cases ------------------------------------------------------------------


def in_band_pause(harness: Harness, folder: Path, quick: bool) -> dict:
    world = new_world(folder)
    worker = harness.start(worker_args(world), stop_at="step-12:admitted")
    worker.wait_for_boundary(experiment.TIMEOUT)
    with opened(world["journal"]) as conn:
        control.set_paused(conn, True)
    worker.release()
    finished = worker.finish(experiment.TIMEOUT)
    found = rows(world)
    paused_at = found["control"]["runtime_control"][0]["changed_at"]
    after = [r["file_id"] for r in found["drive"]["rename_requests"]
             if r["committed_at"] >= paused_at]
    checks = {
        "worker_exited_by_itself": finished.returncode == 0,
        "nothing_in_doubt": found["journal"]["in_doubt"] == 0,
        "stopped_at_the_next_boundary": found["journal"]["confirmed"] == 12,
        # the one step already begun when the flag was set, and nothing else
        "only_the_step_in_flight_after_the_pause": after == ["f012"],
        "no_mail": found["mail"]["messages"] == [],
    }
    return verdict("in_band_pause", checks, effects_after_pause=len(after),
                   returncode=finished.returncode, counts=summary_rows(found),
                   rows=found)


def effects(world: dict, token: str, since: float) -> int:
    """Effects the services admitted with ``token`` at or after ``since``."""
    renames = drive.snapshot(world["drive"])["rename_requests"]
    messages = mail.snapshot(world["mail"])["messages"]
    return (sum(r["credential"] == token and r["committed_at"] >= since
                for r in renames)
            + sum(m["credential"] == token and m["accepted_at"] >= since
                  for m in messages))


def wedged_worker_revoked(harness: Harness, folder: Path, quick: bool) -> dict:
    world = new_world(folder, guarded=True)
    token = broker.issue(world["broker"], "assistant", SCOPE, 120.0)
    wanted = 10 if quick else 40
    worker = harness.start(["-m", "crashcourse.workers.wedged_worker",
                            "--drive", world["drive"], "--mail", world["mail"],
                            "--credential", token])
    wait_until(lambda: effects(world, token, 0.0) >= wanted, "the loop's effects")
    with opened(world["journal"]) as conn:
        control.set_paused(conn, True)
        paused_at = control.runtime(conn)["changed_at"]
    wait_until(lambda: effects(world, token, paused_at) >= wanted,
               "effects after the flag")
    broker.revoke(world["broker"], token, "night-owner")  # judged by its row
    finished = worker.finish(experiment.TIMEOUT)
    before_delivery = rows(world)
    queued = [m for m in before_delivery["mail"]["messages"]
              if m["status"] == mail.QUEUED]
    mail.tick(world["mail"])  # the provider's later delivery
    found = {**rows(world), "broker": broker.snapshot(world["broker"])}
    [revocation] = found["broker"]["revocations"]
    delivered = [m for m in found["mail"]["messages"]
                 if m["message_id"] in {q["message_id"] for q in queued}
                 and m["status"] == mail.SENT
                 and m["accepted_at"] < revocation["revoked_at"] < m["sent_at"]]
    after_revocation = effects(world, token, revocation["revoked_at"])
    refusals = found["drive"]["refusals"] + found["mail"]["refusals"]
    checks = {
        "the_flag_alone_did_not_stop_it": effects(world, token, paused_at) >= wanted,
        "no_effect_after_revocation": after_revocation == 0,
        "refused_for_revocation": [r["reason"] for r in refusals] == [broker.REVOKED],
        "worker_ended_on_the_refusal": finished.returncode == 3,
        "accepted_before_is_still_delivered": len(delivered) == len(queued) > 0,
    }
    return verdict(
        "wedged_worker_revoked", checks, effects_after_revocation=after_revocation,
        flag_alone={"effects_after_flag": effects(world, token, paused_at),
                    "paused_at": paused_at, "stopped_the_worker": False},
        revoked_at=revocation["revoked_at"], queued_at_revocation=len(queued),
        delivered_after_revocation=len(delivered), returncode=finished.returncode,
        counts=summary_rows(found), rows=found)


def scheduler_stays_stopped(harness: Harness, folder: Path, quick: bool) -> dict:
    folder.mkdir()
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
    wait_until(lambda: len(runs()) >= 3, "runs while allowed")
    with opened(state) as conn:
        stop = control.stop_scheduler(conn, "night-owner", "run 122 went wrong")
    time.sleep(0.1)  # the first scheduler ticks on, stopped, before its kill
    killed = first.kill().returncode
    restarted = harness.run(scheduler(state, "restarted", ticks), experiment.TIMEOUT)
    untouched = harness.run(scheduler(fresh, "fresh", ticks), experiment.TIMEOUT)
    with opened(state) as conn:
        found = control.snapshot(conn)
    with opened(fresh) as conn:
        found_fresh = control.snapshot(conn)
    stopped_at = next(s["at"] for s in found["scheduler_switch"] if s["seq"] == stop)
    while_stopped = [r for r in found["runs"] if r["started_at"] >= stopped_at]
    checks = {
        "runs_started_while_allowed": len(found["runs"]) >= 3,
        "none_while_stopped": while_stopped == [],
        "none_where_nobody_looked": found_fresh["runs"] == [],
        "first_killed": killed == -9,
        "restarted_ran_its_ticks": restarted.returncode == untouched.returncode == 0,
    }
    return verdict("scheduler_stays_stopped", checks,
                   runs_started_while_stopped=len(while_stopped),
                   runs_started_on_a_fresh_file=len(found_fresh["runs"]),
                   runs_before_the_stop=len(found["runs"]),
                   rows={"runtime": found, "fresh": found_fresh})


def notification_ack_gap(harness: Harness, folder: Path, quick: bool) -> dict:
    folder.mkdir()
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

    worker = harness.start(args, stop_at="after_notify_accepted")
    worker.wait_for_boundary(experiment.TIMEOUT)
    killed = worker.kill().returncode
    at_kill = found()
    resumed = harness.run(args, experiment.TIMEOUT)
    final = found()
    [note] = final["notifications"]
    sent = [m for m in final["mail"]["messages"]
            if m["operation_key"] == note["operation_key"]]
    checks = {
        "killed_with_sigkill": killed == -9,
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
                   rows={"at_kill": at_kill, "final": final})


def resume(harness: Harness, folder: Path, quick: bool) -> dict:
    world = new_world(folder / "killed")
    killed = killed_at(harness, world, "step-20:after_action")
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
    checks = {
        "killed_with_sigkill": killed == -9,
        "resumed_to_the_end": found["journal"]["confirmed"] == len(PLAN.steps),
        "gates_rechecked_first": decided is not None
        and decided["detail"]["gates_passed"] == [GATE],
        "nothing_twice": summary_rows(found)["duplicate_renames"] == 0
        and len(found["mail"]["messages"]) == 2,
        "failed_gate_refuses": refused.returncode == REFUSED
        and refused_rows["decisions"] == [],
        "refused_resume_sent_nothing": refused_rows["mail"]["messages"] == []
        and refused_rows["journal"]["confirmed"] == GATE,
    }
    return verdict("resume", checks, counts=summary_rows(found),
                   refused_counts=summary_rows(refused_rows),
                   returncodes={"resumed": done.returncode,
                                "refused": refused.returncode},
                   rows={"resumed": found, "refused": refused_rows})


def unwind(harness: Harness, folder: Path, quick: bool) -> dict:
    world = new_world(folder)
    killed = killed_at(harness, world, f"step-{FIRST_MAIL}:after_action")
    with opened(world["journal"]) as conn:
        undone = decisions.unwind(conn, world["task"],
                                  restock_actions(world["drive"], world["mail"]),
                                  who="night-owner")
    after = harness.run(worker_args(world, "--resume-by", "day-owner"),
                        experiment.TIMEOUT)
    found = rows(world)
    keys = {e["operation_key"] for e in found["entries"]}
    kinds = [u["kind"] for u in found["unwinds"]]
    checks = {
        "killed_with_sigkill": killed == -9,
        "every_rename_restored": drive.names(world["drive"]) == SCANS,
        "restores_newest_first": undone[decisions.RESTORE] == list(range(40, 0, -1)),
        "sent_mail_is_compensation": undone[decisions.COMPENSATION] == [FIRST_MAIL]
        and kinds == [decisions.COMPENSATION] + [decisions.RESTORE] * 40,
        "undo_keys_are_their_own": keys.isdisjoint(
            u["operation_key"] for u in found["unwinds"]),
        "mail_not_unsent": len(found["mail"]["messages"]) == 1,
        "resume_refused_after_unwind": after.returncode == REFUSED
        and [d["decision"] for d in found["decisions"]] == ["unwind"],
    }
    return verdict("unwind", checks, unwound=undone, counts=summary_rows(found),
                   rows=found)


def daylight(harness: Harness, folder: Path, quick: bool) -> dict:
    world = new_world(folder)
    with opened(world["journal"]) as conn:
        control.start_scheduler(conn, "day-owner")
    killed = killed_at(harness, world, f"step-{FIRST_MAIL + 1}:after_intent")
    handover = folder / "handover.md"
    command = resume_command(world["dir"], world["task"], "day-owner")
    with opened(world["journal"]) as conn:
        decisions.hand_to_daylight(conn, world["task"], who="night-owner",
                                   reason="a second summary in doubt at 03:14",
                                   resume_command=command, path=str(handover))
    at_handover = rows(world)
    night = [harness.run(["-m", "crashcourse.workers.scheduler", "--state",
                          world["journal"], "--name", "night", "--ticks", "10",
                          "--interval", "0.01"], experiment.TIMEOUT),
             harness.run(worker_args(world), experiment.TIMEOUT)]
    overnight = rows(world)
    written = handover.read_text().split("```")[1].strip()
    morning = harness.run(shlex.split(written)[1:], experiment.TIMEOUT)
    found = rows(world)
    [decided] = at_handover["decisions"]
    checks = {
        "killed_with_sigkill": killed == -9,
        "handover_names_the_step_in_doubt":
            decided["detail"]["in_doubt"]["step"] == FIRST_MAIL + 1,
        "handover_lists_the_sent_mail": [
            e["step"] for e in decided["detail"]["irreversible_done"]] == [FIRST_MAIL],
        "file_holds_the_exact_command": written == shlex.join(command),
        "stayed_stopped_overnight": overnight["control"]["runs"] == []
        and overnight["journal"] == at_handover["journal"]
        and len(overnight["mail"]["messages"]) == 1,
        "the_command_finishes_once": found["journal"]["confirmed"] == len(PLAN.steps)
        and len(found["mail"]["messages"]) == 2
        and len({m["operation_key"] for m in found["mail"]["messages"]}) == 2,
    }
    return verdict("daylight", checks, handover=decided["detail"],
                   returncodes={"night": [n.returncode for n in night],
                                "morning": morning.returncode},
                   counts=summary_rows(found),
                   rows={"at_handover": at_handover, "final": found})


CASES = {case.__name__: case for case in (
    in_band_pause, wedged_worker_revoked, scheduler_stays_stopped,
    notification_ack_gap, resume, unwind, daylight)}


def run(args) -> tuple[dict, list[dict]]:
    """The seven cases in order, each in its own folder and world."""
    progress, trials = experiment.Progress(len(CASES)), []
    with tempfile.TemporaryDirectory() as directory, Harness() as harness:
        for name, case in CASES.items():
            trial = evidence.attempt({"case": name}, case, harness,
                                     Path(directory) / name, args.quick)
            trials.append(progress.report(name, trial))
    by_case = {t["case"]: t for t in trials}

    def measured(case: str, field: str):
        return by_case[case].get(field)

    return {"cases": len(trials), "held": sum(t["holds"] for t in trials),
            "effects_after_revocation": measured("wedged_worker_revoked",
                                                 "effects_after_revocation"),
            "runs_started_while_stopped": measured("scheduler_stays_stopped",
                                                   "runs_started_while_stopped"),
            "notifications_sent": measured("notification_ack_gap",
                                           "notifications_sent")}, trials


def main(argv: list[str] | None = None) -> int:
    parser = experiment.command_line(
        __doc__, quick_help="the seven cases with shorter loops, what the test "
        "suite runs")
    return experiment.main(argv, parser=parser, schema=SCHEMA, script=__file__,
                           run=run)


if __name__ == "__main__":
    sys.exit(main())
