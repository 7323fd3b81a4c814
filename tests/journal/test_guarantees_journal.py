"""What the journal proves about irreversible steps (chapter 07): each test
defends one guarantee against the one-line bug named in its docstring."""

from __future__ import annotations

import time

import pytest

from crashcourse import journal
from crashcourse.journal.plan import save_plan
from crashcourse.lab.example import restock_plan
from crashcourse.services import mail
from crashcourse.store import opened
from crashcourse.workers.journal_worker import build_world, paths, restock_actions

GATE, FIRST_MAIL, LAST_MAIL = 41, 42, 43  # the restock plan: 40 renames first


class Crash(Exception):
    """Stands in for the process dying inside an action."""


@pytest.fixture
def world(tmp_path, backend, store_at):
    """The restock plan, the drive and the mail in their files; the journal
    (and the stored plan) in the backend's store: (plan, task, where)."""
    plan = restock_plan()
    task = build_world(str(tmp_path), plan)
    where = paths(str(tmp_path))
    if backend != "sqlite":
        where["journal"] = store_at("journal")
        with opened(where["journal"]) as conn:
            save_plan(conn, plan)
            journal.install(conn)
    return plan, task, where


def dies_in_step(world, number: int):
    """Run the restock plan's steps before ``number``, then die inside step
    ``number`` after its action took effect; the world, for the resume."""
    plan, task, where = world
    actions = restock_actions(where["drive"], where["mail"])
    with opened(where["journal"]) as conn:
        claim = journal.claim_task(conn, task, "first", ttl=60)
        for step in plan.steps[:number - 1]:
            journal.run_step(conn, task, step, actions[step.action], claim)
        step = plan.steps[number - 1]
        real = actions[step.action]

        def acts_then_dies(args, key):
            real.execute(args, key)  # the target has it ...
            raise Crash  # ... and the worker died before the outcome

        with pytest.raises(Crash):
            journal.run_step(conn, task, step,
                             journal.Action(acts_then_dies, real.probe), claim)
    return plan, task, where, actions


def replacement(conn, task: str) -> dict:
    """The task claimed an hour on, when the first lease (60 s) is over."""
    at = time.time() + 3600
    return {"claim": journal.claim_task(conn, task, "second", ttl=60, now=at),
            "now": at}


def test_an_irreversible_step_in_doubt_is_not_proved_unsent(world):
    """Bug: ``journal_status`` counts the last row's own step as not started
    (``>=``), so a mail that may have gone out reads as provably unsent."""
    plan, task, where, _ = dies_in_step(world, FIRST_MAIL)
    with opened(where["journal"]) as conn:
        seen = journal.journal_status(conn, task, plan)
    assert seen.last_row == FIRST_MAIL
    assert seen.irreversible_not_started == (LAST_MAIL,)
    assert len(mail.messages(where["mail"])) == 1  # it did go out


def test_a_gate_in_doubt_is_settled_by_its_probe(world):
    """Bug: a step in doubt is withdrawn and run again whatever its probe
    says (for a gate: checked again and recorded as run, not as found)."""
    plan, task, where, actions = dies_in_step(world, GATE)
    with opened(where["journal"]) as conn:
        done = journal.run_plan(conn, task, plan, actions, **replacement(conn, task))
        assert done == {"skip": GATE - 1, "probe": 1, "run": 2}
        assert journal.resolutions(conn, task) == {"run": 42, "probe": 1}
    assert len(mail.messages(where["mail"])) == 2


def test_the_mail_provider_delivers_each_message_once(tmp_path):
    # the mail provider is a service: a SQLite file, called by its path
    """Bug: ``tick`` sends every message again, not only the queued ones."""
    path = tmp_path / "mail.sqlite"
    mail.install(path)
    mail.submit(path, "owner@shop.example", "paid", "body", {})
    assert mail.tick(path) == 1
    first = mail.messages(path)
    assert mail.tick(path) == 0
    assert mail.messages(path) == first  # sent_at unchanged: not sent again
