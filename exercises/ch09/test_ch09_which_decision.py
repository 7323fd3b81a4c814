"""Grades exercise 09.3 (which_decision.py): the runbook's decision.

First on paper, from journal states written out by hand; then from real ones:
a journal worker SIGKILLed mid-plan, the situation read from its rows, and
the predicted decision carried out with ``crashcourse.decisions`` to show
what it does (and, where the prediction would be wrong, what goes wrong).
"""

import shlex
import sys

import pytest

from crashcourse import control, decisions, journal
from crashcourse.example import restock_plan, scan_files
from crashcourse.harness import Harness
from crashcourse.plan import GateFailed, Step, load_plan, make_plan
from crashcourse.services import drive, mail
from crashcourse.store import opened
from crashcourse.workers.journal_worker import (
    build_world,
    paths,
    restock_actions,
    resume_command,
)

RESUME, UNWIND, DAYLIGHT = decisions.RESUME, decisions.UNWIND, decisions.DAYLIGHT
GATED = restock_plan()  # renames 1-40, the gate verify_drive at 41, mails 42-43
GATE, TO_SUPPLIER, TO_OWNER = 41, 42, 43
SHAPE = [(s.number, s.action, s.irreversible, s.gate) for s in GATED.steps[39:]]
# A plan as a planner might leave it: an irreversible payment in the middle.
SETTLE = make_plan("settle", [
    Step(1, "rename", {"file_id": "f001", "name": "invoice-2026-001.pdf"}),
    Step(2, "pay_invoice", {"order": "SUP-0042"}, irreversible=True),
    Step(3, "rename", {"file_id": "f002", "name": "invoice-2026-002.pdf"}),
])


@pytest.fixture
def mod(answer):
    assert SHAPE == [(40, "rename", False, False), (GATE, "verify_drive", False, True),
                     (TO_SUPPLIER, "send_mail", True, False),
                     (TO_OWNER, "send_mail", True, False)], (
        "these tests expect the restock plan of chapter 09: 40 renames, a gate, "
        "two mails")
    return answer("ch09", "which_decision")


# --- on paper ----------------------------------------------------------------


def row(plan, number, outcome=None):
    step = plan.steps[number - 1]
    entry = {"step": number, "action": step.action, "args": step.args,
             "operation_key": f"{plan.name}/{number}/{step.action}/k"}
    return entry if outcome is None else {**entry, "outcome": outcome}


def on_paper(mod, confirmed, *, doubt=None, plan=GATED, gates=None, decided=(),
             plan_right=True):
    """A Situation as ``decisions.shown`` would report it: steps 1..confirmed
    have outcomes, step ``doubt`` (if any) has an intent and no outcome."""
    shown = {
        "journal": {"confirmed": confirmed, "in_doubt": int(doubt is not None),
                    "not_started": len(plan.steps) - confirmed - (doubt is not None)},
        "in_doubt": None if doubt is None else row(plan, doubt),
        "irreversible_done": [row(plan, n, {"message_id": n})
                              for n in range(1, confirmed + 1)
                              if plan.steps[n - 1].irreversible],
    }
    if gates is None:  # the gated plan's gate passes unless a case says not
        gates = {GATE: True} if plan is GATED else {}
    return mod.Situation(plan, shown, gates, tuple(decided), plan_right)


@pytest.mark.parametrize(("confirmed", "doubt", "expected"), [
    (0, None, ()),
    (11, 12, ()),  # a rename in doubt can be taken back
    (41, 42, (42,)),  # the supplier's mail in doubt: it may have gone
    (42, None, (42,)),
    (42, 43, (42, 43)),
    (43, None, (42, 43)),
])
def test_beyond_undo_on_the_gated_plan(mod, confirmed, doubt, expected):
    assert mod.beyond_undo(on_paper(mod, confirmed, doubt=doubt)) == expected


def test_the_plan_says_which_steps_are_irreversible(mod):
    """Not the action's name, nor the plan's last steps: the flags."""
    assert mod.beyond_undo(on_paper(mod, 1, doubt=2, plan=SETTLE)) == (2,)
    assert mod.beyond_undo(on_paper(mod, 2, doubt=3, plan=SETTLE)) == (2,)
    assert mod.beyond_undo(on_paper(mod, 1, plan=SETTLE)) == ()


@pytest.mark.parametrize(("confirmed", "doubt", "options", "expected"), [
    (0, None, {}, RESUME),  # nothing done yet
    (11, 12, {}, RESUME),  # a step in doubt: resume asks its probe
    (42, 43, {}, RESUME),  # even a mail in doubt: the provider is asked by key
    (11, 12, {"gates": {GATE: False}}, DAYLIGHT),
    (11, 12, {"gates": {GATE: False}, "plan_right": False}, DAYLIGHT),
    (11, 12, {"plan_right": False}, UNWIND),
    (40, None, {"plan_right": False}, UNWIND),
    (41, 42, {"plan_right": False}, DAYLIGHT),  # the mail may have gone
    (42, None, {"plan_right": False}, DAYLIGHT),
    (43, None, {"plan_right": False}, DAYLIGHT),
    (11, None, {"decided": (UNWIND,)}, UNWIND),  # finish what was begun
    (11, None, {"decided": (DAYLIGHT, UNWIND), "gates": {GATE: False}}, UNWIND),
    (11, 12, {"decided": (DAYLIGHT,)}, RESUME),  # the day shift's call
    (11, 12, {"decided": (DAYLIGHT,), "gates": {GATE: False}}, DAYLIGHT),
    (20, None, {"decided": (RESUME, DAYLIGHT), "plan_right": False}, UNWIND),
], ids=["fresh", "rename-in-doubt", "mail-in-doubt", "gate-fails",
        "gate-fails-plan-wrong", "plan-wrong", "plan-wrong-renames-done",
        "plan-wrong-mail-in-doubt", "plan-wrong-mail-sent", "plan-wrong-all-done",
        "unwound", "unwound-gate-fails", "after-daylight", "after-daylight-gate-fails",
        "after-daylight-plan-wrong"])
def test_the_runbook_on_paper(mod, confirmed, doubt, options, expected):
    said = mod.which_decision(on_paper(mod, confirmed, doubt=doubt, **options))
    assert said == expected


def test_a_plan_without_gates_has_none_to_fail(mod):
    assert mod.which_decision(on_paper(mod, 1, doubt=2, plan=SETTLE)) == RESUME
    assert mod.which_decision(
        on_paper(mod, 1, doubt=2, plan=SETTLE, plan_right=False)) == DAYLIGHT


# --- from real journal states ---------------------------------------------------


@pytest.fixture
def world(tmp_path):
    """The gated restock plan in a fresh world: journal, drive, mail provider."""
    task = build_world(str(tmp_path), GATED)
    where = paths(str(tmp_path))
    with opened(where["journal"]) as conn:
        yield {"conn": conn, "task": task, "where": where, "dir": str(tmp_path),
               "actions": restock_actions(where["drive"], where["mail"])}


def killed_at(world, stop_at):
    """Run the journal worker for real and SIGKILL it at ``stop_at``."""
    with Harness() as harness:
        worker = harness.start(["-m", "crashcourse.workers.journal_worker",
                                "--dir", world["dir"], "--task", world["task"]],
                               stop_at=stop_at)
        worker.wait_for_boundary()
        assert worker.kill().returncode == -9


def read_situation(mod, world, *, plan_right=True):
    """What the person on the rota reads: the rows, and the gates checked now."""
    conn, task, actions = world["conn"], world["task"], world["actions"]
    plan = load_plan(conn, task)
    gates = {}
    for step in (s for s in plan.steps if s.gate):
        try:
            journal.check_gate(task, step, actions[step.action])
            gates[step.number] = True
        except GateFailed:
            gates[step.number] = False
    decided = tuple(d["decision"] for d in decisions.history(conn, task))
    return mod.Situation(plan, decisions.shown(conn, task, plan), gates, decided,
                         plan_right)


def collide(world, name="invoice-2026-030.pdf"):
    """The supplier files its own document under a name the plan gives."""
    drive.install(world["where"]["drive"], {"supplier-30": name}, "supplier")


def confirmed(world):
    return journal.journal_status(world["conn"], world["task"], GATED).count(
        "confirmed")


def test_killed_mid_rename_resume(mod, world):
    killed_at(world, "step-12:after_action")
    assert mod.which_decision(read_situation(mod, world)) == RESUME
    decisions.resume(world["conn"], world["task"], world["actions"], who="ana")
    assert confirmed(world) == len(GATED.steps)
    assert mail.duplicate_messages(world["where"]["mail"]) == 0
    assert len(mail.messages(world["where"]["mail"])) == 2


def test_killed_mid_rename_and_a_gate_fails_daylight(mod, world, tmp_path):
    killed_at(world, "step-12:after_action")
    collide(world)
    assert mod.which_decision(read_situation(mod, world)) == DAYLIGHT
    with pytest.raises(GateFailed):  # what a resume would have met
        decisions.resume(world["conn"], world["task"], world["actions"], who="ana")
    assert decisions.history(world["conn"], world["task"]) == []  # nothing written
    decisions.hand_to_daylight(
        world["conn"], world["task"], who="ana", reason="invoice-2026-030 is taken",
        resume_command=resume_command(world["dir"], world["task"], "day-shift"),
        path=str(tmp_path / "handover.md"))
    assert control.is_paused(world["conn"]) is True
    assert control.scheduler_may_run(world["conn"]) is False
    assert mail.messages(world["where"]["mail"]) == []


def test_killed_mid_rename_and_the_plan_is_wrong_unwind(mod, world):
    killed_at(world, "step-12:after_action")
    assert mod.which_decision(read_situation(mod, world, plan_right=False)) == UNWIND
    undone = decisions.unwind(world["conn"], world["task"], world["actions"],
                              who="ana")
    assert undone[decisions.COMPENSATION] == []  # nothing left for people to mend
    assert drive.names(world["where"]["drive"]) == scan_files()


def test_killed_after_the_supplier_mail_and_the_plan_is_wrong_daylight(mod, world):
    killed_at(world, f"step-{TO_SUPPLIER}:after_action")
    situation = read_situation(mod, world, plan_right=False)
    assert situation.shown["irreversible_done"] == []  # the journal cannot tell ...
    assert len(mail.messages(world["where"]["mail"])) == 1  # ... the provider can
    assert mod.beyond_undo(situation) == (TO_SUPPLIER,)
    assert mod.which_decision(situation) == DAYLIGHT
    # What an unwind at 3 a.m. would have done: the renames go back, the mail
    # stays sent, and a compensation record waits for someone to act on it.
    undone = decisions.unwind(world["conn"], world["task"], world["actions"],
                              who="ana")
    assert undone[decisions.COMPENSATION] == [TO_SUPPLIER]


def test_an_unwound_task_is_never_resumed(mod, world):
    killed_at(world, "step-12:after_action")
    decisions.unwind(world["conn"], world["task"], world["actions"], who="ana")
    # Morning: the scheme was right after all. The runbook still says unwind.
    assert mod.which_decision(read_situation(mod, world)) == UNWIND
    with pytest.raises(decisions.DecisionRefused):
        decisions.resume(world["conn"], world["task"], world["actions"], who="ben")


def test_the_day_shift_runs_the_handovers_command(mod, world, tmp_path):
    killed_at(world, "step-12:after_action")
    handover = decisions.hand_to_daylight(
        world["conn"], world["task"], who="ana", reason="3 a.m., owner asleep",
        resume_command=resume_command(world["dir"], world["task"], "day-shift"),
        path=str(tmp_path / "handover.md"))
    assert mod.which_decision(read_situation(mod, world)) == RESUME
    command = shlex.split(handover["command"])
    assert command[0] == sys.executable
    with Harness() as harness:
        done = harness.run(command[1:])
    assert done.returncode == 0, done.stderr
    assert confirmed(world) == len(GATED.steps)
    assert control.is_paused(world["conn"]) is False
