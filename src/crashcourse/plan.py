"""Durable plans and their order (chapter 07).

A plan is a numbered list of steps; each step names an action, its arguments
(stated as an END STATE where the target allows it: "file F is called X") and
whether it is irreversible. The plan is stored when it is produced and a
resumed run loads the stored version: a regenerated plan may number its steps
differently, and the journal's step numbers would then point at other work.
The task id is derived from the plan's content, so a changed plan is a new task.

``order_plan`` puts reversible work first, the verification gates next and the
irreversible steps last: a run interrupted anywhere before the first
irreversible step cannot have done anything that cannot be undone.

``load_plan`` only reads: it never creates the table, so a resumed run or an
observer that only looks takes no write lock. The running example's plan
(``restock_plan``) lives in ``crashcourse.example``.
"""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple

from crashcourse.store import ensure_schema, immediate

PLAN_SCHEMA = """
CREATE TABLE IF NOT EXISTS plans (
    task TEXT PRIMARY KEY,     -- name + digest of the steps: new plan, new task
    body TEXT NOT NULL         -- canonical JSON of the steps, as produced
)
"""


class UnknownTask(LookupError):
    """No plan is stored under this task id (chapter 07)."""


class PlanChanged(ValueError):
    """A different plan offered under an existing task id (chapter 07)."""


class GateFailed(RuntimeError):
    """A verification gate's check failed; nothing was written (chapter 09).

    ``journal.check_gate`` raises it, before the gate's intent is written."""

    def __init__(self, step: int, observed: dict):
        super().__init__(f"gate step {step} failed: {observed}")
        self.step, self.observed = step, observed


# namedtuples rather than dataclasses: workers import this, and start-up counts.
_StepFields = namedtuple(
    "_StepFields", "number action args irreversible gate", defaults=(False, False)
)


class Step(_StepFields):
    """One numbered step of a plan (chapter 07).

    ``gate`` marks a verification gate: it checks, it changes nothing. A
    resume re-runs every gate first (chapter 09: ``decisions.resume``).
    """

    __slots__ = ()


class Plan(namedtuple("_PlanFields", "name steps")):
    """A named, numbered sequence of steps; ``task`` is its durable id (chapter 07)."""

    __slots__ = ()

    def body(self) -> str:
        steps = [step._asdict() for step in self.steps]
        return json.dumps({"name": self.name, "steps": steps}, sort_keys=True)

    @property
    def task(self) -> str:
        import hashlib  # here, not at the top: workers only load stored plans

        return f"{self.name}-{hashlib.sha256(self.body().encode()).hexdigest()[:12]}"


def make_plan(name: str, steps: list[Step]) -> Plan:
    """Check and freeze a plan: steps numbered 1..n in order (chapter 07)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"plan name must be an identifier: {name!r}")
    for expected, step in enumerate(steps, start=1):
        if step.number != expected:
            raise ValueError(f"step {step.number} found where {expected} belongs")
        if not isinstance(step.args, dict) or not step.action:
            raise ValueError(f"step {step.number}: an action and a dict of args")
    return Plan(name, tuple(steps))


def order_plan(name: str, steps: list[Step]) -> Plan:
    """Reversible work, then gates, then irreversible steps; renumbered.

    Introduced in chapter 07."""

    def rank(step: Step) -> int:
        return 2 if step.irreversible else 1 if step.gate else 0

    ordered = sorted(steps, key=rank)  # sorted() is stable: order kept in a rank
    return make_plan(name, [
        Step(n, s.action, s.args, s.irreversible, s.gate)
        for n, s in enumerate(ordered, start=1)
    ])


def save_plan(conn: sqlite3.Connection, plan: Plan) -> str:
    """Store ``plan`` once; return its task id (chapter 07)."""
    ensure_schema(conn, PLAN_SCHEMA)
    task, body = plan.task, plan.body()
    with immediate(conn):
        conn.execute(
            "INSERT INTO plans (task, body) VALUES (:task, :body)"
            " ON CONFLICT (task) DO NOTHING",
            {"task": task, "body": body},
        )
        stored = conn.execute(
            "SELECT body FROM plans WHERE task = :task", {"task": task}
        ).fetchone()["body"]
    if stored != body:
        raise PlanChanged(f"task {task} is stored with other steps")
    return task


def load_plan(conn: sqlite3.Connection, task: str) -> Plan:
    """The plan stored under ``task``, exactly as it was produced (chapter 07).

    A read: no ``plans`` table yet means no plan, ``UnknownTask``."""
    stored = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plans'"
    ).fetchone()
    row = conn.execute(
        "SELECT body FROM plans WHERE task = :task", {"task": task}
    ).fetchone() if stored else None
    if row is None:
        raise UnknownTask(task)
    data = json.loads(row["body"])
    return Plan(data["name"], tuple(Step(**step) for step in data["steps"]))


def first_irreversible(plan: Plan) -> int | None:
    """The number of the plan's first irreversible step, or None (chapter 07)."""
    return next((s.number for s in plan.steps if s.irreversible), None)
