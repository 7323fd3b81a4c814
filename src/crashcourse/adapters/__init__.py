"""A tool call behind the effect boundary, in any agent framework (chapter 12).

An agent framework runs a tool and then records that it ran. A kill between
the tool's effect and that record leaves the framework nothing to go by, and
its recovery runs the tool again (chapter 12 measures where, framework by
framework). ``EffectTool`` puts one tool behind the book's own boundary,
whichever framework calls it:

* THE KEY COMES FROM THE ACTION. ``EffectTool.key(**arguments)`` is built
  from the task the agent works on, the tool's name and the exact arguments
  (chapter 01's ``operation_key``, through chapter 07's ``step_key``), and
  from nothing the framework assigns: no ``tool_call_id``, step number or
  task id. A re-run node, a re-asked model or a retried activity asking for
  the same action gets the same key; the tool's body sends it to the
  service. A model that changes the arguments asks for another action and
  gets another key: no key can tell a changed request from a new one.
* THE INTENT IS RECORDED FIRST. Each call is a one-step plan run through
  chapter 07's journal (``journal.run_task``) in the adapter's own SQLite
  file: claimed (chapter 05), every write fenced (chapter 06), the intent
  committed before the body runs, the request admitted only while the
  lease still covers its declared wait.
* A CALL FOUND IN DOUBT IS PROBED. On the next call for the same action
  (the framework's recovery), a recorded outcome is returned without
  running anything; an intent without one is settled by the tool's
  ``probe`` once the earlier holder's lease is over (``journal.settle``):
  found, its observation is the result; not found, the body runs again,
  under the same key.

The frameworks' own parts turn an ``EffectTool`` into what each one runs:
``adapters.langgraph.as_tool`` (a LangChain tool), ``adapters.dbos.as_step``
(a DBOS step) and ``adapters.temporal.as_activity`` (a Temporal activity).
Each imports its framework when it is called: this package imports none,
and the runtime stays the standard library.

What it rests on: the service either takes the key (the supplier folds a
second request under it into the first) or can be asked by it (the mail
provider's header search). A service that does neither cannot be made safe
from here. And one holder at a time is enforced by the lease, not assumed:
a second process calling while the first one's lease is live waits it out
(``wait_out_s``), then takes over.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import time
from collections.abc import Callable
from typing import Any

from crashcourse import journal
from crashcourse.effects import operation_key
from crashcourse.journal.plan import Plan, Step
from crashcourse.store import opened
from crashcourse.validate import check_text

KEY_PARAMETER = "operation_key"  # the body's keyword that receives the key
DEFAULT_TTL_S = 10.0  # the lease on one call: its intent, admission and request
DEFAULT_WAIT_S = 5.0  # the longest the body's request may take once it leaves
DEFAULT_WAIT_OUT_S = 60.0  # how long a call waits for an earlier holder's lease


class EffectTool:
    """One tool whose effect is keyed by the action, journaled, and probed on
    resume (chapter 12).

    ``body(**arguments, operation_key=KEY)`` performs the effect and returns
    its JSON result; ``probe(**arguments, operation_key=KEY)`` answers
    ``(done, observed)``: did the service get this action, and what it shows.
    ``journal_path`` is the adapter's own SQLite file (created on first use,
    at ``synchronous``: NORMAL survives a killed process, FULL a power cut);
    ``task`` names the work the agent does (``restock-flour-0042``), the same
    in every process that resumes it. Calling the tool with keyword
    arguments returns the body's result, or the probe's observation for a
    call a killed process made."""

    def __init__(self, body: Callable[..., Any], probe: Callable[..., tuple],
                 *, journal_path: str, task: str, name: str | None = None,
                 ttl: float = DEFAULT_TTL_S, wait_s: float = DEFAULT_WAIT_S,
                 wait_out_s: float = DEFAULT_WAIT_OUT_S,
                 owner: str | None = None, synchronous: str = "NORMAL") -> None:
        self.body, self.probe = body, probe
        self.journal_path, self.task = journal_path, check_text("task", task)
        self.name = check_text("tool name", name or body.__name__)
        if not 0 < wait_s < ttl:
            raise ValueError(f"the request's wait ({wait_s} s) must fit in the "
                             f"lease ({ttl} s)")
        self.ttl, self.wait_s, self.wait_out_s = ttl, wait_s, wait_out_s
        self.owner, self.synchronous = owner, synchronous
        self.function = self._as_function()

    def call_task(self, arguments: dict) -> str:
        """The journal's task for one action: (task, tool, exact arguments)."""
        return operation_key(self.task, self.name, "call", arguments)

    def key(self, **arguments) -> str:
        """The operation key the service gets for this action (chapter 12)."""
        return journal.step_key(self.call_task(arguments), self.step(arguments))

    def step(self, arguments: dict) -> Step:
        return Step(1, self.name, dict(arguments))

    def __call__(self, **arguments) -> Any:
        """Run the action at most once per key, as chapter 07's journal runs a
        step: skip (outcome recorded), probe (in doubt) or run."""
        task = self.call_task(arguments)
        plan = Plan(task, (self.step(arguments),))
        action = journal.Action(
            execute=lambda args, key: self.body(**args, **{KEY_PARAMETER: key}),
            probe=lambda args, key: self.probe(**args, **{KEY_PARAMETER: key}),
            wait_s=self.wait_s)
        owner = self.owner or f"{self.name}@pid-{os.getpid()}"
        deadline = time.monotonic() + self.wait_out_s
        with opened(self.journal_path, synchronous=self.synchronous) as conn:
            journal.install(conn)
            while True:
                try:
                    journal.run_task(conn, task, plan, {self.name: action},
                                     owner=owner, ttl=self.ttl)
                    break
                except journal.TaskHeld:  # an earlier holder's lease is live
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise
                    journal.wait_out(conn, task, timeout=left)
            row = journal.step_row(conn, task, 1)
        if row is None or row["outcome"] is None:  # a stop, or a cancelled task
            raise journal.TaskHeld(f"{self.name}: not run ({task})")
        return json.loads(row["outcome"])

    def _as_function(self) -> Callable[..., Any]:
        """A plain function with the body's signature minus the key: what a
        framework inspects to build its tool, step or activity."""
        shown = inspect.signature(self.body)
        signature = shown.replace(parameters=[
            p for name, p in shown.parameters.items() if name != KEY_PARAMETER])

        def call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)  # positional, as DBOS may
            bound.apply_defaults()
            return self(**bound.arguments)

        functools.update_wrapper(call, self.body)
        del call.__wrapped__  # the signature below is the one to read
        call.__signature__ = signature
        call.__annotations__ = {name: hint for name, hint
                                in getattr(self.body, "__annotations__", {}).items()
                                if name != KEY_PARAMETER}
        call.__name__ = call.__qualname__ = self.name
        return call


def guarded(probe: Callable[..., tuple], **options) -> Callable:
    """Decorator form: ``@guarded(probe, journal_path=..., task=...)`` over a
    body gives its ``EffectTool`` (chapter 12)."""
    return lambda body: EffectTool(body, probe, **options)
