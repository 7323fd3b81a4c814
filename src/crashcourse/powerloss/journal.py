"""The chapter 07 journal under power loss (chapter 11).

BOOK-ONLY (imports ``apsw`` through ``powerloss``). A small plan (two
renames on the drive, the drive's gate, one mail) runs through
``journal.run_plan`` with the journal's file and the two services' files
recorded. The run marks the journal's own commits where ``journal`` announces
them: at ``step-N:after_intent`` step N's intent is committed, and with it
step N-1's outcome (one commit per step); when ``run_plan`` returns, the last
outcome too.

At every crash point the image is judged twice:

* as the power cut left it: which committed intents and outcomes the
  journal LOST (``acknowledged_lost``), and which steps the targets show done
  while the journal has no intent for them, or no outcome (the action reached
  the target, the journal does not know);
* after ``run_plan`` resumed it: the steps performed twice (a second mail
  with the same operation key, a second rename request), whether the image
  held each of them in doubt (an intent without an outcome: the one step the
  journal knows it may have done; ``twice_without_doubt`` counts images
  where a step ran twice WITHOUT that), and whether the plan finished. The
  probes decide what the journal lost.

The run holds a claim on its task (chapter 07), taken before the recording
begins, like the stored plan; each image is resumed under a claim taken an
hour later on an injected clock, when the cut run's lease is long over (a
power cut leaves no holder alive).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

from crashcourse import journal, store
from crashcourse.journal.plan import Step, load_plan, order_plan, save_plan
from crashcourse.powerloss import (
    Mode,
    disk_calls,
    evidence_points,
    recording,
    runtime_opens,
)
from crashcourse.powerloss.images import SYNCED_ONLY, explore, judge_database
from crashcourse.powerloss.runs import marking
from crashcourse.services import drive, mail
from crashcourse.workers.journal_worker import paths, restock_actions

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["FILES", "SERVICES", "small_plan", "journal_run", "committed",
    "blind_mail_actions", "steps_run_twice", "resume_journal", "lost",
    "journal_case"]

FILES = {"f001": "scan-001.pdf", "f002": "scan-002.pdf"}
INTENT, FINISHED = "intent", "finished"  # the marks of the journal's commits
SERVICES = Mode("WAL", "FULL")


def small_plan():
    """Two renames, the drive's gate, one mail: the chapter 07 plan in small
    (chapter 11)."""
    steps = [Step(0, "rename", {"file_id": file_id, "name": f"invoice-{i}.pdf"})
             for i, file_id in enumerate(FILES, start=1)]
    names = {s.args["file_id"]: s.args["name"] for s in steps}
    steps += [Step(0, "send_mail", {"to": "owner@shop.example", "subject": "filed",
                                    "body": "2 invoices renamed"}, irreversible=True),
              Step(0, "verify_drive", {"names": names}, gate=True)]
    return order_plan("power", steps)


def _intent_mark(name: str):
    step, _, phase = name.partition(":")
    return (INTENT, step.removeprefix("step-")) if phase == "after_intent" else None


def journal_run(folder, journal_mode: Mode):
    """The small plan through the journal, recorded; the task id (ch. 11)."""
    where, plan = paths(str(folder)), small_plan()
    drive.install(where["drive"], FILES)
    mail.install(where["mail"])
    with store.opened(where["journal"]) as conn:
        task = save_plan(conn, plan)
        journal.install(conn)
        claim = journal.claim_task(conn, task, "power", ttl=60)
    modes = {os.path.basename(where["journal"]): journal_mode,
             os.path.basename(where["drive"]): SERVICES,
             os.path.basename(where["mail"]): SERVICES}
    # wal_autocheckpoint as store.connect leaves it (1000 pages): in NORMAL
    # nothing syncs the journal's WAL before the run's last close.
    with recording(folder, modes) as recorder, \
            marking(recorder, _intent_mark):
        conn = store.connect(where["journal"])
        try:
            journal.run_plan(conn, task, plan, restock_actions(where["drive"],
                                                               where["mail"]), claim)
            recorder.mark(FINISHED, task)  # its last outcome has committed
        finally:
            conn.close()
    return recorder, task


def committed(recorder, point: int) -> tuple[set[int], set[int]]:
    """The steps whose intent, and whose outcome, the journal had committed
    before crash point ``point``: its own acknowledgements (chapter 11)."""
    intents = {int(n) for n in recorder.marked(INTENT, point)}
    finished = bool(recorder.marked(FINISHED, point))
    outcomes = {n for n in intents if n + 1 in intents or finished}
    return intents, outcomes


def blind_mail_actions(drive_path: str, mail_path: str) -> dict:
    """MUTANT (chapter 11): chapter 07's actions, but the mail's probe never
    finds the mail, as for a provider nobody can ask. The negative control of
    "the probe decides what the journal lost"."""
    actions = restock_actions(drive_path, mail_path)
    send = actions["send_mail"]
    actions["send_mail"] = send._replace(
        probe=lambda args, key: (False, {"message_id": None}))
    return actions


def steps_run_twice(where: dict, task: str, plan) -> list[int]:
    """The steps the targets' rows show performed more than once: a mail
    under its step's key, a rename request for the same file and name
    (chapter 11)."""
    mails = Counter(m["operation_key"]
                    for m in mail.snapshot(where["mail"])["messages"])
    renames = Counter((r["file_id"], r["name"])
                      for r in drive.snapshot(where["drive"])["rename_requests"]
                      if r["requester"] == "assistant")
    return [s.number for s in plan.steps
            if (s.action == "send_mail" and mails[journal.step_key(task, s)] > 1)
            or (s.action == "rename"
                and renames[(s.args["file_id"], s.args["name"])] > 1)]


def resume_journal(folder: Path, task: str, actions=restock_actions) -> dict:
    """Judge one image: the journal's rows and what the targets show, then
    resume it with ``run_plan`` and count what ran twice (chapter 11).
    ``actions(drive_path, mail_path)`` gives the resume's actions and probes."""
    where = paths(str(folder))
    refused = next(filter(None, (  # the runtime's own opens, on a copy
        runtime_opens(folder, os.path.basename(where[name]), tables, record)
        for name, tables, record in (("journal", ("journal",), False),
                                     ("drive", drive.TABLES, True),
                                     ("mail", mail.TABLES, True)))), None)
    checked = [judge_database(where[name]) for name in ("journal", "drive", "mail")]
    if any(c["corrupt"] for c in checked):
        return {"corrupt": True, "refused": refused,
                "problems": [p for c in checked for p in c.get("problems", [])]}
    actions = actions(where["drive"], where["mail"])
    with store.opened(where["journal"]) as conn:
        plan = load_plan(conn, task)
        rows = {e["step"]: e["outcome"] is not None
                for e in journal.entries(conn, task)}
        done = [s.number for s in plan.steps if not s.gate and actions[s.action]
                .probe(s.args, journal.step_key(task, s))[0]]
        later = time.time() + 3600  # the cut run's lease (60 s) is over
        claim = journal.claim_task(conn, task, "resume", ttl=60, now=later)
        how = journal.run_plan(conn, task, plan, actions, claim, now=later)
        status = journal.journal_status(conn, task, plan).summary()
        twice = steps_run_twice(where, task, plan)  # the plan reads conn
    return {"corrupt": False, "refused": refused, "rows": sorted(rows.items()),
            "done_at_target": done,
            "twice": twice,  # and whether the journal held each in doubt:
            "twice_not_in_doubt": [n for n in twice if rows.get(n) is not False],
            "no_intent_for_done": [n for n in done if n not in rows],
            "no_outcome_for_done": [n for n in done if rows.get(n) is False],
            "resolved_by_probe": how[journal.PROBE],
            "ran_twice": mail.duplicate_messages(where["mail"])
            + drive.duplicate_requests(where["drive"]),
            "finished": status["confirmed"] == len(plan.steps)}


def lost(recorder, point: int, verdict: dict) -> list[str]:
    """What the journal committed before ``point`` and the image lacks (ch. 11)."""
    intents, outcomes = committed(recorder, point)
    rows = dict(verdict["rows"])
    return ([f"intent {n}" for n in sorted(intents) if n not in rows]
            + [f"outcome {n}" for n in sorted(outcomes) if n in rows and not rows[n]])


def journal_case(folder, journal_mode: Mode, *, model: str = SYNCED_ONLY,
                 actions=restock_actions, **options) -> dict:
    """Experiment 3 for one journal mode and model, counted (chapter 11).
    The run uses the real actions; each image's resume uses ``actions``."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    recorder, task = journal_run(folder, journal_mode)
    points = explore(recorder, lambda image: resume_journal(image, task, actions),
                     model=model, **options)
    judged = [(p.point, v) for p in points for v in p.verdicts]
    sound = [(point, v) for point, v in judged if not v["corrupt"]]
    losses = [lost(recorder, point, v) for point, v in sound]
    return {"mode": f"journal {journal_mode}, services {SERVICES}", "model": model,
            "disk_calls": disk_calls(recorder), "crash_points": len(points),
            "sampled_points": sum(p.sampled for p in points), "images": len(judged),
            "corrupt": len(judged) - len(sound),
            "acknowledged_lost": sum(bool(found) for found in losses),
            "first_loss": next(({"point": point, "lost": found} for (point, _), found
                                in zip(sound, losses, strict=True) if found), None),
            "no_intent_for_done": sum(bool(v["no_intent_for_done"]) for _, v in sound),
            "no_outcome_for_done": sum(bool(v["no_outcome_for_done"])
                                       for _, v in sound),
            "resolved_by_probe": sum(v["resolved_by_probe"] for _, v in sound),
            "double_charges": sum(v["ran_twice"] for _, v in sound),
            "twice_without_doubt": sum(bool(v["twice_not_in_doubt"])
                                       for _, v in sound),
            "unfinished": sum(not v["finished"] for _, v in sound),
            "refused_sound": sum(v["refused"] is not None for _, v in sound),
            "trusted_corrupt": sum(v["refused"] is None for _, v in judged
                                   if v["corrupt"]),
            "points": evidence_points(recorder, points, lambda point: dict(zip(
                ("intents", "outcomes"), map(sorted, committed(recorder, point)),
                strict=True)))}
