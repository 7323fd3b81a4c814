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

Steps are stored a row each, keyed (task, number), beside a head row (name,
how many). ``load_plan`` reads the head alone; its ``StoredSteps`` read rows
when asked: ``plan.steps[k:]`` reads those after step k, so a resume costs the
same for 10 steps and for 10,000 (issue 11). ``load_plan`` only reads: it never
creates a table, so a resumed run or an observer takes no write lock. The
running example's plan (``restock_plan``) lives in ``crashcourse.lab.example``.
"""

from __future__ import annotations

import json
import operator
import sqlite3
from collections import namedtuple
from collections.abc import Sequence

from crashcourse.store import dialect, ensure_schema, immediate

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["PLAN_SCHEMA", "UnknownTask", "PlanChanged", "OldPlanStore",
    "GateFailed", "Step", "Plan", "StoredSteps", "make_plan", "order_plan",
    "save_plan", "load_plan", "first_irreversible"]

PLAN_SCHEMA = """
CREATE TABLE IF NOT EXISTS plans (
    task TEXT PRIMARY KEY,     -- name + digest of the steps: new plan, new task
    name TEXT NOT NULL,
    steps INTEGER NOT NULL     -- how many: len(plan.steps) reads no step
);
CREATE TABLE IF NOT EXISTS plan_steps (
    task TEXT NOT NULL REFERENCES plans (task),
    number INTEGER NOT NULL,
    step TEXT NOT NULL,        -- canonical JSON of the step, as produced
    PRIMARY KEY (task, number)
){without_rowid}
"""


class UnknownTask(LookupError):
    """No plan is stored under this task id (chapter 07)."""


class PlanChanged(ValueError):
    """A different plan offered under an existing task id (chapter 07)."""


class OldPlanStore(RuntimeError):
    """A ``plans`` table in the format before issue 11 (one JSON body per
    plan): it still loads, whole; a new plan is not written into it (chapter 07)."""


class GateFailed(RuntimeError):
    """A verification gate's check failed; nothing was written (chapter 09).

    ``journal.probe_gate`` raises it, before the gate's intent is written."""

    def __init__(self, step: int, observed: dict):
        super().__init__(f"gate step {step} failed: {observed}")
        self.step, self.observed = step, observed


# namedtuples rather than dataclasses: workers import this, and start-up counts.
_StepFields = namedtuple("_StepFields", "number action args irreversible gate",
                         defaults=(False, False))


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


class StoredSteps(Sequence):
    """A stored plan's steps, read from their rows only when asked (chapter 07).

    ``len`` comes from the plan's head row; ``steps[k:]`` reads only the rows
    after step k, one query; ``steps[i]`` reads one row. The rows are read on
    the connection ``load_plan`` was given: keep it open while the plan is
    used. Equal to the tuple of the same steps, like a plan just made."""

    __slots__ = ("_conn", "_task", "_count")

    def __init__(self, conn: sqlite3.Connection, task: str, count: int):
        self._conn, self._task, self._count = conn, task, count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, stride = index.indices(self._count)
            if stride == 1:
                return self._read(start, max(start, stop))
            return self._read(0, self._count)[index]
        position = operator.index(index)  # an int, as a tuple would insist
        position += self._count if position < 0 else 0
        if not 0 <= position < self._count:
            raise IndexError(f"plan {self._task} has {self._count} steps")
        return self._read(position, position + 1)[0]

    def __iter__(self):
        return iter(self._read(0, self._count))

    def __eq__(self, other) -> bool:
        if isinstance(other, (tuple, StoredSteps)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"StoredSteps({self._task!r}, {self._count} steps)"

    def _read(self, start: int, stop: int) -> tuple[Step, ...]:
        """Steps ``start + 1`` to ``stop`` (positions start..stop-1), in order."""
        try:
            rows = self._conn.execute(
                "SELECT step FROM plan_steps WHERE task = :task"
                " AND number > :start AND number <= :stop ORDER BY number",
                {"task": self._task, "start": start, "stop": stop},
            ).fetchall()
        except sqlite3.ProgrammingError as unusable:  # closed, or another thread
            raise sqlite3.ProgrammingError(
                f"plan {self._task}: its steps are read on the connection "
                f"load_plan was given ({unusable}); use the plan while that "
                "connection is open, or keep tuple(plan.steps)") from None
        if len(rows) != stop - start:  # the head promises steps it lacks
            raise ValueError(f"task {self._task}: steps {start + 1}..{stop} "
                             f"are not all stored ({len(rows)} found)")
        return tuple(Step(**json.loads(row[0])) for row in rows)


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
    return make_plan(name, [Step(n, s.action, s.args, s.irreversible, s.gate)
                            for n, s in enumerate(ordered, start=1)])


def save_plan(conn: sqlite3.Connection, plan: Plan) -> str:
    """Store ``plan`` once, a row per step; return its task id (chapter 07).

    The same plan saved again changes nothing; other steps stored under its
    task id raise ``PlanChanged`` (the stored steps are compared, each as its
    canonical JSON: saving reads them all, loading never does)."""
    if _columns(conn) == "old":
        raise OldPlanStore("this store keeps plans as one JSON body each (before"
                           " issue 11): it loads them, but new plans go in a new file")
    ensure_schema(conn, PLAN_SCHEMA.format(without_rowid=dialect(conn).without_rowid))
    task = plan.task  # and each step's JSON, as Plan.body writes it in its list:
    steps = [json.dumps(step._asdict(), sort_keys=True) for step in plan.steps]
    with immediate(conn):
        added = conn.execute(
            "INSERT INTO plans (task, name, steps) VALUES (:task, :name, :steps)"
            " ON CONFLICT (task) DO NOTHING",
            {"task": task, "name": plan.name, "steps": len(steps)},
        ).rowcount
        if added:  # step n is the list's n-th: one statement, one round trip
            conn.execute("INSERT INTO plan_steps (task, number, step) "
                         + dialect(conn).plan_steps,
                         {"task": task, "steps": json.dumps(steps)})
            return task
        head = conn.execute("SELECT name, steps FROM plans WHERE task = :task",
                            {"task": task}).fetchone()
        stored = [row[0] for row in conn.execute(
            "SELECT step FROM plan_steps WHERE task = :task ORDER BY number",
            {"task": task})]
    if tuple(head) != (plan.name, len(steps)) or stored != steps:
        raise PlanChanged(f"task {task} is stored with other steps")
    return task


def load_plan(conn: sqlite3.Connection, task: str) -> Plan:
    """The plan stored under ``task``, exactly as it was produced (chapter 07).

    Reads the head row alone: the steps come as ``StoredSteps``, read from
    their rows when asked. A read: no ``plans`` table yet means no plan,
    ``UnknownTask``. A store of the old one-body format loads whole."""
    kind = _columns(conn)
    query = ("SELECT name, steps FROM plans WHERE task = :task" if kind == "rows"
             else "SELECT body FROM plans WHERE task = :task")
    head = conn.execute(query, {"task": task}).fetchone() if kind else None
    if head is None:
        raise UnknownTask(task)
    if kind == "old":
        data = json.loads(head[0])
        return Plan(data["name"], tuple(Step(**step) for step in data["steps"]))
    return Plan(head[0], StoredSteps(conn, task, head[1]))


def _columns(conn: sqlite3.Connection) -> str | None:
    """Which ``plans`` table the file holds: "rows", "old" (one body per
    plan, before issue 11) or None (no table yet)."""
    names = {row[0] for row in conn.execute(dialect(conn).table_columns,
                                            {"table": "plans"})}
    return None if not names else "old" if "body" in names else "rows"


def first_irreversible(plan: Plan) -> int | None:
    """The number of the plan's first irreversible step, or None (chapter 07)."""
    return next((s.number for s in plan.steps if s.irreversible), None)
