"""The worker of chapter 08: run or recover one workflow, step by step.

    python -m crashcourse.workers.workflow_worker --dir DIR --workflow ID \\
        --who NAME --url SUPPLIER_URL [--lease S] [--patience S]
        [--mode versioned|unversioned|unleased]

``DIR`` holds the worker's own file and the services' files (``paths``); the
supplier's is kept by the supplier process at ``SUPPLIER_URL``. One command
starts and recovers: the rows say what is left, and the choices recorded
at creation (``build_world``) are all it needs; it never asks the model.
The steps, bound in ``restock_remotes``: reserve, charge, mail. Boundaries:
``after_read`` (state and version read, nothing written), then for each
step ``before_remote:<step>`` (attempted, not admitted), ``admitted:<step>``
(the residual window) and ``after_remote:<step>`` (called, no outcome).

Each attempt it makes is held for ``--lease`` seconds (default
``workflow_steps.LEASE_S``). A step in doubt whose attempt's lease is live
belongs to a holder that may be paused, not dead: the worker waits for the
lease to end if that takes at most ``--patience`` seconds (default
``PATIENCE_S``), and says whom it waited for (``waited_for``); else it exits
4 without probing or calling.

Exit status (``EXIT``; one JSON line on stdout, graders read rows): 0 it did
what it could (``state``: applied, waiting_for_approval, failed, cancelled);
3 refused: a worker or a person moved the workflow first, or the admission
refused the call (``refused``); 4 held: an earlier attempt's lease outlasts
the patience, or another process kept the workflow's write lock past the
busy timeout (a holder paused mid-write: boundary ``moving:running``, inside
the first transition's transaction), and this run wrote nothing (``held``);
5 a service could not be reached or did not decide (the supplier down, a
lost answer, the payment service's or the mail provider's lock kept past
the call's declared wait): the step stays in doubt, its attempt's lease
runs out and the next worker probes it (``unreachable``);
2 bad input (usage, a blank value, a ``--url`` that is not http(s)://host,
an unknown workflow, a file in DIR not installed): one line on stderr,
nothing written; 74 the machine refused a file mid-run: one line.
``--mode unversioned`` and ``--mode unleased`` are DRAFTS (``run_naive``,
``advance_step_unleased``), kept to be caught.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import sys
import time

from crashcourse import workflow
from crashcourse.boundary import boundary
from crashcourse.effects import FencingToken, operation_key
from crashcourse.services import mail, payments
from crashcourse.services import supplier as supplier_client
from crashcourse.services.payments import authority
from crashcourse.services.supplier import store as supplier_store
from crashcourse.store import StoreMissing, immediate, opened
from crashcourse.validate import check_url, seconds
from crashcourse.workers.options import (
    BAD_INPUT,
    check_installed,
    one_line_errors,
    refuse,
    text_options,
)
from crashcourse.workflow import APPLIED, PENDING, RUNNING, WAITING
from crashcourse.workflow import steps as workflow_steps
from crashcourse.workflow.steps import CANNOT_UNDO, DONE, NEEDS_PERSON, UNDONE, Remote

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["STEPS", "BOUNDARIES", "EXIT", "MODES", "PATIENCE_S", "CALL_WAIT_S",
    "ServiceBusy", "paths", "choose", "build_world", "restock_remotes", "run",
    "advance_step_unleased", "run_naive", "write_naive", "USAGE", "NEEDED",
    "parse", "main", "urlerror"]

STEPS = ("reserve", "charge", "mail")
BOUNDARIES = ("after_read", *(f"{where}:{step}" for step in STEPS
              for where in ("before_remote", "admitted", "after_remote")))
EXIT = {"finished": 0, "usage": BAD_INPUT, "refused": 3, "held": 4,
        "unreachable": 5}
MODES = ("versioned", "unversioned", "unleased")
PATIENCE_S = 30.0  # the longest a recovery waits for an earlier attempt's lease
# Each call's declared wait: how long it may still take effect once admitted.
# The supplier's client gives up after this; the payment service and the mail
# provider wait this long at most for their file's write lock.
CALL_WAIT_S = 3.0


class ServiceBusy(TimeoutError):
    """A service's file stayed locked past the call's declared wait (a
    writer paused inside its transaction): the service decided nothing, the
    step stays in doubt (issue 35)."""


def paths(directory: str) -> dict[str, str]:
    """The worker's own file and the three services' files (chapter 08)."""
    return {name: os.path.join(directory, f"{name}.sqlite")
            for name in ("workflow", "supplier", "payments", "mail")}


def choose(model, workflow_id: str) -> dict:
    """Ask the model ONCE; the three steps' choices (chapter 08)."""
    proposal = model.propose(f"restock for {workflow_id}")
    amount = proposal.quantity * proposal.unit_cents
    return {
        "reserve": dict(vars(proposal)),  # sku, quantity, unit_cents
        "charge": {"order_id": workflow_id, "amount_cents": amount,
                   "currency": "USD"},
        "mail": {"to": "owner@shop.example",
                 "subject": f"{proposal.sku} reserved and paid",
                 "body": f"{proposal.quantity} x {proposal.sku}: {amount} cents"},
    }


def build_world(directory: str, workflow_id: str = "restock-8", *,
                approved: bool = True, model=None) -> dict:
    """A fresh world in ``directory``: the workflow (pending) as ``model``
    (the scripted one) chose it, empty services, and with ``approved`` the
    charge's approval, a fixture standing in for a person. Start the supplier
    on ``paths["supplier"]``. {workflow_id, paths, choices} (chapter 08)."""
    from crashcourse.lab.example import FLOUR, ScriptedModel  # not in the worker

    where = paths(directory)
    supplier_store.install(where["supplier"])
    payments.install(where["payments"])
    mail.install(where["mail"])
    choices = choose(model or ScriptedModel(FLOUR), workflow_id)
    if approved:
        payments.approve(where["payments"], **choices["charge"])
    with opened(where["workflow"]) as conn:
        workflow_steps.install(conn)
        workflow.create(conn, workflow_id, choices, who="planner")
    return {"workflow_id": workflow_id, "paths": where, "choices": choices}


def restock_remotes(where: dict, url: str) -> dict[str, Remote]:
    """The three steps bound to their services: call, probe, undo (ch. 08).

    Only the supplier takes the token, so only the reserve has a ``fence``:
    a compensation raises it before it probes, and a late reserve of the
    cancelled workflow is refused (412). The payment service takes the key
    and no token, the mail provider neither: a late charge or mail can land
    after a probe, and a later probe finds it (by the key, or by the mail's
    key header)."""

    def reserve(args, key, token):
        status, body = supplier_client.place_order(
            url, key, args, token=FencingToken(*token), wait_s=CALL_WAIT_S)
        if status in (200, 201):
            return RUNNING, {"happened": True, "receipt": body["receipt"]}
        return workflow.FAILED, {"happened": False, "answer": status, **body}

    def reserved(args, key):
        status, body = supplier_client.get_order(url, key)
        if status not in (200, 404):
            raise OSError(f"the supplier answered a lookup with {status}")
        return status == 200, {**body, "copies": int(status == 200)}

    def release(args, key, token):
        own = operation_key(token[0], "reserve", "release", {"order": key})
        status, body = supplier_client.release_order(
            url, key, own, token=FencingToken(*token))
        if status in (200, 201):
            return "released", UNDONE, own, "released at the supplier"
        return ("release_refused", NEEDS_PERSON, own,
                f"the supplier answered {status}: a person decides")

    def fence(token):  # the cancel reaching the supplier (issue 29)
        supplier_client.fence_work(url, FencingToken(*token), CALL_WAIT_S)

    def charge(args, key, token):
        try:
            answer = payments.issue_payment(
                where["payments"], key, **args,
                busy_timeout_ms=int(CALL_WAIT_S * 1000))
        except payments.PaymentConflict:
            return workflow.FAILED, {"happened": False, "refused": "conflict"}
        except payments.ApprovalRefused as refused:  # a person must approve
            return WAITING, {"happened": False, "refused": refused.reason}
        except payments.PaymentServiceBusy as busy:  # nothing charged
            raise ServiceBusy(str(busy)) from None
        return RUNNING, {"happened": True, "answer": answer}

    def charged(args, key):
        found = authority.payment_history(where["payments"], key)
        return found is not None, {**(found or {}), "copies": int(found is not None)}

    def send(args, key, token):
        try:
            sent = mail.submit(where["mail"], args["to"], args["subject"],
                               args["body"], {mail.KEY_HEADER: key},
                               busy_timeout_ms=int(CALL_WAIT_S * 1000))
        except sqlite3.OperationalError as busy:
            if "database is locked" not in str(busy):
                raise  # the machine (74)
            raise ServiceBusy("the mail provider's lock was kept past"
                              f" {CALL_WAIT_S} s: nothing queued") from None
        return RUNNING, {"happened": True, "message_id": sent["message_id"]}

    def sent(args, key):  # by the key header: the provider keeps no key itself
        found, seen = mail.probe_sent(where["mail"], key)
        return found, {**seen, "copies": mail.copies(where["mail"], key)}

    owed = ("refund_owed", NEEDS_PERSON, None,
            "the payment service has no refund: a person decides")
    unsent = ("cannot_unsend", CANNOT_UNDO, None, "a sent mail cannot be unsent")
    return {"reserve": Remote(reserve, reserved, release, CALL_WAIT_S, fence),
            "charge": Remote(charge, charged, lambda *_: owed, CALL_WAIT_S),
            "mail": Remote(send, sent, lambda *_: unsent, CALL_WAIT_S)}


def run(conn, workflow_id: str, remotes: dict, *, who: str, model=None,
        lease_s: float = workflow_steps.LEASE_S, patience_s: float = PATIENCE_S,
        step=workflow_steps.advance_step) -> dict:
    """Run or recover one workflow from its rows; what it left (chapter 08).

    ``model`` is asked only when no such workflow is recorded yet. Every write
    is a transition checked against the version THIS worker holds: one that
    was overtaken raises ``workflow.TransitionRefused``. A step held by an
    earlier attempt's live lease is waited for, at most ``patience_s`` in
    all; beyond that ``workflow_steps.AttemptHeld`` goes to the caller."""
    if model is not None and not conn.execute(
            "SELECT 1 FROM workflows WHERE id = :id", {"id": workflow_id}).fetchone():
        workflow.create(conn, workflow_id, choose(model, workflow_id), who=who)
    seen = workflow.read(conn, workflow_id)
    boundary("after_read")
    state, version = seen["state"], seen["version"]
    if state in (PENDING, WAITING):
        version = workflow.transition(conn, workflow_id, expected_state=state,
                                      expected_version=version, to_state=RUNNING,
                                      who=who, note="run")
        state = RUNNING
    waited, deadline = [], time.monotonic() + patience_s
    while state == RUNNING and (todo := [
            s for s in workflow_steps.progress(conn, workflow_id)
            if s["status"] != DONE]):
        try:
            state, version = step(conn, workflow_id, todo[0],
                                  remotes[todo[0]["step"]], version=version,
                                  who=who, lease_s=lease_s)
        except workflow_steps.AttemptHeld as held:
            if held.left_s > deadline - time.monotonic():
                raise  # not within our patience: the caller says so and exits
            if not waited or waited[-1]["version"] != held.version:
                waited.append({"step": held.step, "version": held.version,
                               "who": held.who})
            time.sleep(held.left_s + 0.01)  # then read the rows again
    if state == RUNNING:  # every step's effect happened
        version = workflow.transition(conn, workflow_id, expected_state=RUNNING,
                                      expected_version=version, to_state=APPLIED,
                                      who=who, note="every step done")
        state = APPLIED
    return {"workflow_id": workflow_id, "who": who, "state": state,
            "version": version, "transitions": version - seen["version"],
            "waited_for": waited}


def advance_step_unleased(conn, workflow_id: str, step: dict, remote: Remote, *,
                      version: int, who: str, lease_s: float) -> tuple[str, int]:
    """DRAFT, the chapter's second failed attempt: versions and no lease. A
    step in doubt is probed at once, and the call leaves with no admission,
    so a holder paused after its attempt calls after its replacement did.
    Never the reference: see ``workflow_steps.advance_step`` (chapter 08)."""
    name, args, key = step["step"], step["args"], step["operation_key"]
    if step["status"] == workflow_steps.IN_DOUBT and remote.probe(args, key)[0]:
        return RUNNING, workflow_steps.record_outcome(
            conn, workflow_id, name, {"happened": True, "probed": True},
            expected_version=version, who=who)
    version = workflow_steps.attempt_step(conn, workflow_id, name,
                                          expected_version=version, who=who,
                                          lease_s=lease_s)
    boundary(f"before_remote:{name}")
    to_state, outcome = remote.call(args, key, (workflow_id, version))
    boundary(f"after_remote:{name}")  # only here is the version checked again
    return to_state, workflow_steps.record_outcome(
        conn, workflow_id, name, outcome, expected_version=version, who=who,
        to_state=to_state)


def run_naive(conn, workflow_id: str, remotes: dict, *, who: str) -> dict:
    """DRAFT, the chapter's opening failure: read the state, act, write the
    state, comparing no version. Two of these that read the same state both
    make the call. Never the reference: see ``run`` (chapter 08)."""
    seen = workflow.read(conn, workflow_id)
    todo = [s for s in workflow_steps.progress(conn, workflow_id)
            if s["status"] != DONE]
    boundary("after_read")  # it acts on what it read here, whatever comes
    for step in todo:
        name = step["step"]
        boundary(f"before_remote:{name}")
        state, outcome = remotes[name].call(step["args"], step["operation_key"],
                                            (workflow_id, seen["version"] + 1))
        boundary(f"after_remote:{name}")
        write_naive(conn, workflow_id, state, who, step, outcome)
        if state != RUNNING:
            break
    else:  # every step went through
        state = APPLIED
        write_naive(conn, workflow_id, state, who)
    return {"workflow_id": workflow_id, "who": who, "state": state}


def write_naive(conn, workflow_id, to_state, who, step=None, outcome=None) -> None:
    """DRAFT: overwrite the state, comparing nothing; note the step."""
    with immediate(conn):
        before = workflow.read(conn, workflow_id)
        version = before["version"] + 1
        conn.execute("UPDATE workflows SET state = :state, version = :version"
                     " WHERE id = :id",  # no check of what this worker read
                     {"state": to_state, "version": version, "id": workflow_id})
        workflow.write_history(conn, workflow_id, version, before["state"],
                               to_state, who, "unversioned")
        if step is not None:
            conn.execute(
                "INSERT INTO workflow_steps (workflow_id, version, step,"
                " operation_key, phase, outcome) VALUES (:id, :version, :step,"
                f" :key, '{workflow_steps.OUTCOME}', :outcome)",
                {"id": workflow_id, "version": version, "step": step["step"],
                 "key": step["operation_key"], "outcome": json.dumps(outcome)})


USAGE = ("usage: workflow_worker --dir DIR --workflow ID --who NAME"
         " --url SUPPLIER_URL [--lease S] [--patience S]"
         " [--mode versioned|unversioned|unleased]")
NEEDED = {"workflow": workflow_steps.TABLES, "payments": payments.TABLES,
          "mail": mail.TABLES}  # installed by build_world before any worker


def parse(argv: list[str]) -> dict:
    """``--name value`` pairs, none blank, else ValueError (ch. 08)."""
    options = text_options(argv, ("dir", "workflow", "who", "url"),
                           {"mode": MODES[0], "lease": None, "patience": None},
                           USAGE)
    if options["mode"] not in MODES:
        raise ValueError(f"--mode must be one of {MODES}; {USAGE}")
    check_url("--url", options["url"])  # :abc once passed, and the reserve
    # attempt was written before http.client's InvalidURL traceback (issue 35)
    for name, default in (("lease", workflow_steps.LEASE_S),
                          ("patience", PATIENCE_S)):
        try:
            value = seconds(str(options.get(name, default)))
        except ValueError:
            value = math.nan
        if not value > 0:  # NaN fails too
            raise ValueError(f"--{name} must be seconds above 0; {USAGE}")
        options[name] = value
    return options


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Check, run or recover ``--workflow``, print one JSON line (ch. 08)."""
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        where = paths(args["dir"])
        check_installed(*((where[name], tables) for name, tables in NEEDED.items()))
    except (ValueError, StoreMissing) as bad:
        return refuse(bad)
    report = {"workflow_id": args["workflow"], "who": args["who"]}
    remotes = restock_remotes(where, args["url"])
    with opened(where["workflow"]) as conn:
        try:
            if args["mode"] == "unversioned":
                report = run_naive(conn, args["workflow"], remotes, who=args["who"])
            else:
                report = run(conn, args["workflow"], remotes, who=args["who"],
                             lease_s=args["lease"], patience_s=args["patience"],
                             step=workflow_steps.advance_step
                             if args["mode"] == "versioned" else advance_step_unleased)
        except workflow.TransitionRefused as refused:
            report |= {"refused": refused.reason, "current": refused.current}
        except workflow_steps.AttemptHeld as held:
            report |= {"held": {"step": held.step, "version": held.version,
                                "who": held.who}}
        except sqlite3.OperationalError as busy:  # the workflow's own file:
            if "database is locked" not in str(busy):  # a service's is ServiceBusy
                raise  # a full disk, an I/O error: the machine (74)
            report |= {"held": "another process kept the workflow's write lock"
                               " past the busy timeout (a holder paused"
                               " mid-write?); this run's waiting transaction"
                               " wrote nothing"}
        except KeyError:  # workflow.read found no such row: nothing written
            return refuse(f"no workflow {args['workflow']!r} in {where['workflow']}")
        except (ConnectionError, TimeoutError, supplier_client.NotDecided,
                urlerror()) as unreachable:
            refuse(f"a service did not answer ({unreachable}); the step stays in "
                   "doubt for the next worker's probe, after its lease")
            report |= {"unreachable": str(unreachable)}
    print(json.dumps(report, sort_keys=True))
    outcome = next((name for name in ("refused", "held", "unreachable")
                    if name in report), "finished")
    return EXIT[outcome]


def urlerror() -> type:
    """``urllib.error.URLError``, which the supplier client has loaded."""
    from urllib.error import URLError

    return URLError


if __name__ == "__main__":
    sys.exit(main())
