"""Grades exercise 09.3 (which_decision.py): the runbook you wrote, by what
each decision leaves behind.

Every case is a real world: a journal worker SIGKILLed mid-plan, the
situation read from its rows, YOUR decision carried out with
``crashcourse.journal.decisions`` as the person on the rota would, and the world
then graded from the journal's and the services' rows on the consequences
PROMPT.md lists (C1-C6). No test asks which decision you named: only what
it did. Some cases accept more than one decision.
"""

import contextlib
import tempfile
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from crashcourse import journal
from crashcourse.journal import decisions
from crashcourse.journal.plan import GateFailed, Step, load_plan, make_plan
from crashcourse.lab.example import restock_plan, scan_files
from crashcourse.lab.harness import Harness
from crashcourse.services import broker, drive, mail
from crashcourse.store import opened
from crashcourse.workers.journal_worker import (
    SCOPE,
    build_world,
    paths,
    restock_actions,
    resume_command,
)

RESUME, UNWIND, DAYLIGHT = decisions.RESUME, decisions.UNWIND, decisions.DAYLIGHT
GATED = restock_plan()  # renames 1-40, the gate verify_drive at 41, mails 42-43
TO_SUPPLIER = 42
HOLDER = "journal-worker"  # the worker's claim and credential


def early_mail_plan():
    """A plan as a planner might leave it: the supplier's mail at step 3,
    between renames, then the gate and the owner's mail."""
    base = {s.args.get("file_id"): s for s in GATED.steps if s.action == "rename"}
    renames = [base[f"f{i:03d}"] for i in range(1, 11)]
    mails = [s for s in GATED.steps if s.action == "send_mail"]
    gate = Step(0, "verify_drive",
                {"names": {s.args["file_id"]: s.args["name"] for s in renames}},
                gate=True)
    ordered = [*renames[:2], mails[0], *renames[2:], gate, mails[1]]
    return make_plan("restock", [s._replace(number=n)
                                 for n, s in enumerate(ordered, start=1)])


@pytest.fixture
def mod(answer):
    return answer("ch09", "which_decision")


def fresh_world(tmp_path, plan):
    """A fresh world for ``plan`` whose services are guarded by a broker, and
    the credential the killed worker presents."""
    where = {**paths(str(tmp_path)), "broker": str(tmp_path / "broker.sqlite")}
    broker.install(where["broker"])
    task = build_world(str(tmp_path), plan, broker=where["broker"])
    token = broker.issue(where["broker"], HOLDER, SCOPE, 300)
    with opened(where["journal"]) as conn:
        yield {"conn": conn, "task": task, "where": where, "dir": str(tmp_path),
               "token": token, "path": tmp_path,
               "actions": restock_actions(where["drive"], where["mail"],
                                          credential=token)}


@pytest.fixture
def world(tmp_path):
    """The restock plan: 40 renames, the gate at 41, the mails at 42-43."""
    yield from fresh_world(tmp_path, GATED)


@pytest.fixture
def early_world(tmp_path):
    yield from fresh_world(tmp_path, early_mail_plan())


def killed_at(world, stop_at):
    """Run the journal worker for real and SIGKILL it at ``stop_at``."""
    with Harness() as harness:
        worker = harness.start(["-m", "crashcourse.workers.journal_worker",
                                "--dir", world["dir"], "--task", world["task"],
                                "--credential", world["token"], "--ttl", "1",
                                "--wait", "0.25"], stop_at=stop_at)
        worker.wait_for_boundary()
        worker.kill()


def collide(world, name="invoice-2026-030.pdf"):
    """The supplier files its own document under a name the plan gives."""
    drive.install(world["where"]["drive"], {"supplier-30": name}, "supplier")


def read_situation(mod, world, *, plan_right):
    """What the person on the rota reads: the rows, and the gates checked now."""
    conn, task, actions = world["conn"], world["task"], world["actions"]
    plan = load_plan(conn, task)
    gates = {}
    for step in (s for s in plan.steps if s.gate):
        try:
            journal.probe_gate(task, step, actions[step.action])
            gates[step.number] = True
        except GateFailed:
            gates[step.number] = False
    decided = tuple(d["decision"] for d in decisions.history(conn, task))
    return mod.Situation(plan, decisions.shown(conn, task, plan), gates, decided,
                         plan_right)


def rows(world) -> dict:
    """What the grader reads: the journal, the decisions, the services."""
    conn, task = world["conn"], world["task"]
    plan = load_plan(conn, task)
    return {"journal": journal.journal_status(conn, task, plan).summary(),
            "steps": len(plan.steps),
            "unwinds": decisions.unwinds(conn, task),
            "messages": mail.messages(world["where"]["mail"]),
            "requests": drive.snapshot(world["where"]["drive"])["rename_requests"],
            "shop_files": drive.names(world["where"]["drive"])}


def carry_out(world, decision) -> str | None:
    """Do what the person decided, as ``crashcourse.journal.decisions`` does it; the
    runtime's refusal, if it refused (C1), else None."""
    conn, task = world["conn"], world["task"]
    try:
        if decision == RESUME:
            if decisions.history(conn, task)[-1:] and decisions.history(
                    conn, task)[-1]["decision"] == DAYLIGHT:
                # The day shift grants the holder again, as the hand-over says.
                broker.grant(world["where"]["broker"], HOLDER, "ana")
                token = broker.issue(world["where"]["broker"], HOLDER, SCOPE, 300)
                world["actions"] = restock_actions(
                    world["where"]["drive"], world["where"]["mail"],
                    credential=token)
            decisions.resume(conn, task, world["actions"], who="ana")
        elif decision == UNWIND:
            decisions.unwind(conn, task, world["actions"], who="ana")
        elif decision == DAYLIGHT:
            night = world["path"] / f"handover-{len(decisions.history(conn, task))}"
            decisions.hand_to_daylight(
                conn, task, who="ana", reason="the runbook said so",
                resume_command=resume_command(world["dir"], task, "day-shift"),
                path=str(night), broker=world["where"]["broker"], holder=HOLDER)
        else:
            pytest.fail(f"not a decision: {decision!r}")
    except (GateFailed, decisions.DecisionRefused) as refused:
        return f"{type(refused).__name__}: {refused}"
    return None


def decide(mod, world, *, plan_right):
    """Read the situation, let the answer decide, carry it out; the rows
    before and after, and what the runtime said."""
    situation = read_situation(mod, world, plan_right=plan_right)
    decision = mod.which_decision(situation)
    assert decision in decisions.DECISIONS, f"not a decision: {decision!r}"
    before = rows(world)
    refused = carry_out(world, decision)
    return decision, before, rows(world), refused


# --- the consequences, each read from rows ------------------------------------


def carried_out(decision, refused):
    assert refused is None, (
        f"C1: the runtime refused your {decision!r}: {refused}. The night moved"
        " nothing")


def nothing_twice(after):
    keys = [m["operation_key"] for m in after["messages"]]
    assert len(keys) == len(set(keys)), f"C2: a mail went twice: {keys}"
    pairs = [(r["file_id"], r["name"]) for r in after["requests"]
             if r["requester"] == "assistant"]
    assert len(pairs) == len(set(pairs)), "C2: the drive got a rename twice"


def finished_not_undone(decision, after):
    assert after["unwinds"] == [], (
        f"C3: your {decision!r} undid a plan the person judged right")
    assert after["journal"]["confirmed"] == after["steps"], (
        f"C3: a plan judged right, its gates passing, is not finished after your"
        f" {decision!r}: {after['journal']}")


def not_undone(decision, after):
    assert after["unwinds"] == [], (
        f"C3: your {decision!r} undid a plan the person judged right")


def no_further_step(decision, before, after):
    assert len(after["messages"]) == len(before["messages"]), (
        f"C4: after your {decision!r} the wrong plan sent another mail")
    new = [r["file_id"] for r in after["requests"][len(before["requests"]):]
           if not r["name"].startswith("scan-")]  # a restore goes back to a scan
    assert new == [], f"C4: after your {decision!r} the wrong plan renamed {new}"


def back_as_the_shop_left_it(decision, after, clause="C4"):
    assert after["shop_files"] == scan_files(), (
        f"{clause}: after your {decision!r} the drive is not back as the shop"
        " left it")


def no_compensation_at_night(decision, after):
    owed = [u["step"] for u in after["unwinds"]
            if u["kind"] == decisions.COMPENSATION]
    assert owed == [], (
        f"C5: your {decision!r} left compensation records for steps {owed}:"
        " what cannot be taken back (a mail sent, a list published), about"
        " renames now undone, at night")


# --- the cases ------------------------------------------------------------------


def test_a_rename_in_doubt_and_the_plan_right(mod, world):
    killed_at(world, "step-12:after_action")
    decision, _, after, refused = decide(mod, world, plan_right=True)
    carried_out(decision, refused)
    finished_not_undone(decision, after)
    nothing_twice(after)


def test_a_mail_in_doubt_and_the_plan_right(mod, world):
    """The provider accepted the supplier's mail; the journal had not yet
    recorded it."""
    killed_at(world, f"step-{TO_SUPPLIER}:after_action")
    decision, _, after, refused = decide(mod, world, plan_right=True)
    carried_out(decision, refused)
    finished_not_undone(decision, after)
    nothing_twice(after)


def test_a_gate_fails_and_the_plan_is_right(mod, world):
    killed_at(world, "step-12:after_action")
    collide(world)
    decision, _, after, refused = decide(mod, world, plan_right=True)
    carried_out(decision, refused)
    not_undone(decision, after)
    nothing_twice(after)


def test_the_plan_is_wrong_and_nothing_irreversible_happened(mod, world):
    killed_at(world, "step-12:after_action")
    decision, before, after, refused = decide(mod, world, plan_right=False)
    carried_out(decision, refused)
    no_further_step(decision, before, after)
    back_as_the_shop_left_it(decision, after)
    no_compensation_at_night(decision, after)


def test_the_plan_is_wrong_and_a_gate_fails(mod, world):
    """Someone else's file holds a name the plan gives; ours still carry the
    names the run gave them, and a restore only touches those."""
    killed_at(world, "step-12:after_action")
    collide(world)
    decision, before, after, refused = decide(mod, world, plan_right=False)
    carried_out(decision, refused)
    no_further_step(decision, before, after)
    back_as_the_shop_left_it(decision, after)
    no_compensation_at_night(decision, after)


def test_the_plan_is_wrong_and_the_supplier_mail_was_accepted(mod, world):
    killed_at(world, f"step-{TO_SUPPLIER}:after_action")
    sent = mail.messages(world["where"]["mail"])
    assert len(sent) == 1, (  # the provider has it
        f"the set-up's kill after the supplier's mail left {len(sent)} mails at"
        " the provider, not 1 (the grader's world, not your answer)")
    decision, before, after, refused = decide(mod, world, plan_right=False)
    carried_out(decision, refused)
    no_further_step(decision, before, after)
    no_compensation_at_night(decision, after)


def test_the_plan_is_wrong_and_the_supplier_mail_was_not_sent(mod, world):
    """The same journal as above (step 42 in doubt), but nothing left: an
    unwind or a hand-over both leave nothing owed; a resume sends."""
    killed_at(world, f"step-{TO_SUPPLIER}:after_intent")
    sent = mail.messages(world["where"]["mail"])
    assert sent == [], (
        f"the set-up's kill before the supplier's mail left {len(sent)} mails at"
        " the provider, not none (the grader's world, not your answer)")
    decision, before, after, refused = decide(mod, world, plan_right=False)
    carried_out(decision, refused)
    no_further_step(decision, before, after)
    no_compensation_at_night(decision, after)


def test_a_plan_that_mails_early_and_is_wrong(mod, early_world):
    """The supplier's mail is step 3 here: read the plan's flags, not the
    restock plan's step numbers."""
    world = early_world
    killed_at(world, "step-5:after_action")
    decision, before, after, refused = decide(mod, world, plan_right=False)
    carried_out(decision, refused)
    no_further_step(decision, before, after)
    no_compensation_at_night(decision, after)


def test_an_interrupted_unwind_is_finished(mod, world):
    """The night's unwind died after five restores. In the morning the person
    thinks the scheme was right after all."""
    killed_at(world, "step-12:after_action")
    real = world["actions"]["rename"]
    restored = []

    def dies_after_five(args, before, key):
        if len(restored) == 5:
            raise RuntimeError("killed in the middle of the unwind")
        restored.append(args["file_id"])
        return real.restore(args, before, key)

    dying = {**world["actions"], "rename": real._replace(restore=dies_after_five)}
    with pytest.raises(RuntimeError):
        decisions.unwind(world["conn"], world["task"], dying, who="ana")
        pytest.fail("the grader's world, not your answer: the set-up's unwind was to"
                    " die after five restores")
    assert len(restored) == 5, (
        f"the set-up's unwind restored {len(restored)} files before it died,"
        " not 5 (the grader's world, not your answer)")
    decision, _, after, refused = decide(mod, world, plan_right=True)
    carried_out(decision, refused)
    back_as_the_shop_left_it(decision, after, clause="C6")
    nothing_twice(after)


def test_after_a_handover_the_day_shift_finishes(mod, world):
    killed_at(world, "step-12:after_action")
    night = carry_out(world, DAYLIGHT)
    assert night is None, (  # the night's decision
        f"the set-up's hand-over at night was refused ({night!r}): the"
        " grader's world, not your answer")
    decision, _, after, refused = decide(mod, world, plan_right=True)
    carried_out(decision, refused)
    finished_not_undone(decision, after)
    nothing_twice(after)


# --- drawn plans: several gates, irreversible steps that are not mail --------
#
# The cases above share one plan shape: one gate, and the mails the only
# irreversible steps. A rule can pass them by the action's name ("send_mail is
# beyond undo") or by one gate passing. Here the plans are drawn: two or three
# gates, each over its own renames, in any order among the steps; renames the
# plan flags irreversible (publishing a price list under its public name:
# customers download it, and a rename back does not take it back); zero to two
# mails. The worker is killed at a drawn step and boundary; another file may
# then take a name one gate checks (that gate fails, the others pass); the
# plan is judged right or wrong. The consequences are graded as above.


class Drawn(NamedTuple):
    plan: object  # the Plan
    kill: str  # the boundary the worker is SIGKILLed at
    collision: str | None  # a name another file takes after the kill
    plan_right: bool

    def beyond_undo(self) -> bool:
        """Whether an irreversible step is done or may be: one before the
        kill, or the step killed at (in doubt at either boundary)."""
        killed = int(self.kill.split(":")[0].removeprefix("step-"))
        return any(s.irreversible for s in self.plan.steps[:killed])


def drawn_plan(tokens, gate_names) -> object:
    """A plan from ``tokens`` in order: ("rename", i, published),
    ("mail", i), ("gate", i) with ``gate_names[i]`` the file ids it checks."""
    steps = []
    for token in tokens:
        if token[0] == "rename":
            _, i, published = token
            steps.append(Step(0, "rename", {"file_id": f"f{i:03d}",
                                            "name": f"invoice-2026-{i:03d}.pdf"},
                              irreversible=published))
        elif token[0] == "mail":
            to = ("orders@supplier.example", "owner@shop.example")[token[1]]
            steps.append(Step(0, "send_mail", {
                "to": to, "subject": "restock invoices filed",
                "body": "invoices renamed"}, irreversible=True))
        else:
            steps.append(Step(0, "verify_drive", {"names": {
                f"f{i:03d}": f"invoice-2026-{i:03d}.pdf"
                for i in sorted(gate_names[token[1]])}}, gate=True))
    return make_plan("restock", [s._replace(number=n)
                                 for n, s in enumerate(steps, start=1)])


@st.composite
def drawn_cases(draw) -> Drawn:
    renames = draw(st.integers(min_value=3, max_value=7))
    published = draw(st.sets(st.integers(min_value=1, max_value=renames),
                             min_size=1, max_size=2))
    mails = draw(st.integers(min_value=0, max_value=2))
    gates = draw(st.integers(min_value=2, max_value=3))
    tokens = draw(st.permutations(
        [("rename", i, i in published) for i in range(1, renames + 1)]
        + [("mail", i) for i in range(mails)] + [("gate", i) for i in range(gates)]))
    acting = [n for n, t in enumerate(tokens, start=1) if t[0] != "gate"]
    killed = draw(st.sampled_from(acting))
    kill = f"step-{killed}:{draw(st.sampled_from(['after_intent', 'after_action']))}"
    later = [t[1] for t in tokens[killed:] if t[0] == "rename"]
    collide_with = draw(st.sampled_from([None, *later]))
    # each gate checks its own renames; with a collision drawn, the first gate
    # checks the colliding name and the last one does not
    everyone = range(1, renames + 1)
    gate_names = [draw(st.sets(st.sampled_from(everyone), min_size=1))
                  for _ in range(gates)]
    if collide_with is not None:
        gate_names[0].add(collide_with)
        gate_names[-1].discard(collide_with)
        if not gate_names[-1]:
            gate_names[-1].add(next(i for i in everyone if i != collide_with))
    collision = None if collide_with is None else f"invoice-2026-{collide_with:03d}.pdf"
    return Drawn(drawn_plan(tokens, gate_names), kill, collision,
                 draw(st.booleans()))


# Cases kept whatever the draw: a published rename done, a plan judged wrong;
# a published rename in doubt after its action, judged wrong; two gates, one
# failing, a plan judged right.
PUBLISHED_DONE = Drawn(drawn_plan(
    [("rename", 1, False), ("rename", 2, True), ("rename", 3, False), ("gate", 0),
     ("rename", 4, False), ("gate", 1), ("mail", 0)], [{1, 2, 3}, {4}]),
    "step-3:after_action", None, False)
PUBLISHED_IN_DOUBT = Drawn(drawn_plan(
    [("rename", 1, False), ("gate", 0), ("rename", 2, True), ("rename", 3, False),
     ("gate", 1), ("mail", 1)], [{1, 2}, {3}]),
    "step-3:after_action", None, False)
ONE_GATE_FAILS = Drawn(drawn_plan(
    [("rename", 1, False), ("rename", 2, False), ("gate", 0), ("rename", 3, True),
     ("rename", 4, False), ("gate", 1), ("mail", 0)], [{1, 2}, {3, 4}]),
    "step-2:after_action", "invoice-2026-004.pdf", True)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@example(case=PUBLISHED_DONE)
@example(case=PUBLISHED_IN_DOUBT)
@example(case=ONE_GATE_FAILS)
@given(case=drawn_cases())
def test_drawn_plans_meet_the_consequences(mod, case):
    """Read the plan's flags and every gate: a drawn plan, killed at a drawn
    step, maybe a gate failing, judged right or wrong; your decision carried
    out and graded on C1-C5 from the rows."""
    with tempfile.TemporaryDirectory() as folder, \
            contextlib.contextmanager(fresh_world)(Path(folder), case.plan) as world:
        killed_at(world, case.kill)
        if case.collision is not None:
            collide(world, case.collision)
        decision, before, after, refused = decide(mod, world,
                                                  plan_right=case.plan_right)
        carried_out(decision, refused)
        nothing_twice(after)
        if case.plan_right and case.collision is None:
            finished_not_undone(decision, after)
        elif case.plan_right:
            not_undone(decision, after)
        else:
            no_further_step(decision, before, after)
            no_compensation_at_night(decision, after)
            if not case.beyond_undo():
                back_as_the_shop_left_it(decision, after)
