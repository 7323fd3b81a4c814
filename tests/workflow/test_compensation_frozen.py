"""Compensation against a holder frozen in its residual window (chapter 08,
issue 29; review 2026-12-02, chapters 05-08 finding 5).

A real workflow worker is SIGSTOPped at ``admitted:<step>`` (its call let
out, nothing sent); the person cancels and compensates after the attempt's
lease (an injected instant on the leases' clock, no sleep); the worker is
thawed and goes on; the person compensates again. Graded from rows: the
compensation rows and the final report against what the services hold (the
supplier's ``orders``, ``releases`` and request log, the payment service's
``payments``, the mail provider's ``messages``). Each case is run twice at
the same barrier: with the runtime's rule, and with the rule before issue
29 (``old_settle_step``, no fence), which loses the race.
"""

from __future__ import annotations

import pytest

from crashcourse import workflow
from crashcourse.lab.harness import Harness
from crashcourse.services import mail
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import count_rows, opened
from crashcourse.workers import workflow_worker
from crashcourse.workflow import steps as workflow_steps

AFTER_ANY_LEASE = 4_000_000_000.0  # an instant past every lease taken now
LEASE = str(workflow_worker.CALL_WAIT_S + 30)  # the lease never ends first
REFUSED_AT_OUTCOME = workflow_worker.EXIT["refused"]


def old_settle_step(step, remote, token, at):
    """The rule before issue 29 (the negative control): after the lease the
    probe decides, and a probe that finds nothing is written off as nothing
    to undo, fence or no fence."""
    args, key = step["args"], step["operation_key"]
    admitted = workflow_steps.holder(
        [a for a in step["attempts"] if a["admitted_at"] is not None])
    if step["status"] == workflow_steps.IN_DOUBT and admitted is None:
        return ("none", workflow_steps.NOTHING_TO_UNDO, None, "never admitted")
    if step["status"] == workflow_steps.IN_DOUBT and admitted["expires"] > at:
        return None
    if step["status"] == workflow_steps.DONE or remote.probe(args, key)[0]:
        return remote.undo(args, key, token)
    return ("none", workflow_steps.NOTHING_TO_UNDO, None, "not found")


def frozen_then_compensated(tmp_path, step: str, old: bool, monkeypatch):
    """worker-1 frozen at ``admitted:<step>``; cancel; compensate; thaw;
    compensate again. The two reports, what the services hold, and the
    worker's exit status."""
    if old:
        monkeypatch.setattr(workflow_steps, "settle_step", old_settle_step)
    built = workflow_worker.build_world(str(tmp_path))
    where, wf = built["paths"], built["workflow_id"]
    with Harness() as harness, start_supplier(harness, where["supplier"]) as sup:
        remotes = workflow_worker.restock_remotes(where, sup.url)
        if old:  # the cancel never reached the supplier
            remotes = {name: r._replace(fence=None) for name, r in remotes.items()}
        worker = harness.start(
            ["-m", "crashcourse.workers.workflow_worker", "--dir", str(tmp_path),
             "--workflow", wf, "--who", "worker-1", "--url", sup.url,
             "--lease", LEASE], stop_at=f"admitted:{step}")
        worker.wait_for_boundary()  # admitted; its call has not left
        worker.freeze()
        worker.release()  # read once it runs again
        with opened(where["workflow"]) as conn:
            seen = workflow.read(conn, wf)["version"]
            workflow.cancel(conn, wf, expected_version=seen, who="person")
            first = workflow_steps.compensate(conn, wf, remotes, who="person",
                                              now=AFTER_ANY_LEASE)
        worker.thaw()
        finished = worker.finish()
        with opened(where["workflow"]) as conn:
            last = workflow_steps.compensate(conn, wf, remotes, who="person",
                                             now=AFTER_ANY_LEASE)
        with opened(where["supplier"]) as remote:
            held = {"orders": count_rows(remote, "orders"),
                    "releases": count_rows(remote, "releases"),
                    "order_posts": [row[0] for row in remote.execute(
                        "SELECT answer FROM requests WHERE method = 'POST'"
                        " AND operation_key = :key ORDER BY seq",
                        {"key": built_key(built, "reserve")})]}
    with opened(where["payments"]) as paid:
        held["payments"] = count_rows(paid, "payments")
    held["messages"] = len(mail.messages(where["mail"]))
    return first, last, held, finished.returncode


def built_key(built: dict, step: str) -> str:
    """The operation key the workflow derived for ``step`` at creation."""
    with opened(built["paths"]["workflow"]) as conn:
        return next(c["operation_key"] for c in
                    workflow.read(conn, built["workflow_id"])["choices"]
                    if c["step"] == step)


def fate(report, step):
    return next((c["status"] for c in report["compensations"]
                 if c["step"] == step), None)


LATE = {"mail": ("messages", workflow_steps.CANNOT_UNDO),
        "charge": ("payments", workflow_steps.NEEDS_PERSON)}


@pytest.mark.parametrize("step", list(LATE))
def test_a_late_effect_without_a_token_is_in_doubt_until_a_probe_finds_it(
        tmp_path, monkeypatch, step):
    """Bug (issue 29): ``nothing_to_undo`` is written on a probe alone; the
    thawed holder sends (or charges); the report says not_done while the
    service holds the effect. The mail provider takes neither key nor token,
    the payment service the key only: neither can refuse the late call."""
    first, last, held, status = frozen_then_compensated(tmp_path, step, False,
                                                        monkeypatch)
    table, undo = LATE[step]
    assert first["in_doubt"] == [step] and fate(first, step) is None
    assert held[table] == 1  # it landed after the first compensation
    assert status == REFUSED_AT_OUTCOME  # its outcome came after the cancel
    assert fate(last, step) == undo  # the second probe found it
    assert step in last["completed"] and last["in_doubt"] == []
    assert step not in last["not_done"]


@pytest.mark.parametrize("step", list(LATE))
def test_without_the_rule_the_late_effect_is_written_off(tmp_path, monkeypatch,
                                                         step):
    """The negative control at the same barrier: the report is false for
    ever (a compensation row is written once)."""
    first, last, held, status = frozen_then_compensated(tmp_path, step, True,
                                                        monkeypatch)
    table, _ = LATE[step]
    assert fate(first, step) == fate(last, step) == workflow_steps.NOTHING_TO_UNDO
    assert step in last["not_done"] and held[table] == 1
    assert status == REFUSED_AT_OUTCOME


def test_a_late_reserve_is_refused_by_the_fence_the_cancel_raised(
        tmp_path, monkeypatch):
    """Bug (issue 29): the supplier accepts the thawed holder's reserve
    (201) and nothing releases it: a reservation for a cancelled workflow.
    With the fence raised before the probe, its POST is refused (412), and
    the first compensation's nothing_to_undo stays true."""
    first, last, held, status = frozen_then_compensated(tmp_path, "reserve",
                                                        False, monkeypatch)
    assert fate(first, "reserve") == workflow_steps.NOTHING_TO_UNDO
    assert held["order_posts"] == [412]  # it did send, and was refused
    assert {name: held[name] for name in ("orders", "releases", "payments",
                                          "messages")} == dict.fromkeys(
        ("orders", "releases", "payments", "messages"), 0)
    assert last["compensations"] == first["compensations"]
    assert status == REFUSED_AT_OUTCOME


def test_without_the_fence_the_late_reserve_is_left_in_place(
        tmp_path, monkeypatch):
    """The negative control at the same barrier."""
    first, last, held, status = frozen_then_compensated(tmp_path, "reserve",
                                                        True, monkeypatch)
    assert fate(last, "reserve") == workflow_steps.NOTHING_TO_UNDO
    assert held["order_posts"] == [201]
    assert (held["orders"], held["releases"]) == (1, 0)
    assert status == REFUSED_AT_OUTCOME
