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

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import json
import os
import threading
import time
import typing
from collections.abc import Callable, Iterator
from typing import Any

from crashcourse import journal
from crashcourse.effects import operation_key
from crashcourse.journal.plan import Plan, Step
from crashcourse.store import connect, on_server, opened
from crashcourse.validate import canonical, check_text

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["KEY_PARAMETER", "OCCURRENCE", "DEFAULT_TTL_S", "DEFAULT_WAIT_S",
    "DEFAULT_WAIT_OUT_S", "PROBE_CONTRACT", "ProbeContract", "NotSerializable",
    "jsonable", "checked_probe_answer", "EffectTool", "guarded", "langgraph"]

KEY_PARAMETER = "operation_key"  # the body's keyword that receives the key
OCCURRENCE = "occurrence"  # the caller's keyword for a deliberate repeat
DEFAULT_TTL_S = 10.0  # the lease on one call: its intent, admission and request
DEFAULT_WAIT_S = 5.0  # the longest the body's request may take once it leaves
DEFAULT_WAIT_OUT_S = 60.0  # how long a call waits for an earlier holder's lease
PROBE_CONTRACT = ("probe(**arguments, operation_key=KEY) must return"
                  " (done: bool, observed: JSON)")
_OPEN = threading.local()  # this thread's journal connections: see journal_connection


@contextlib.contextmanager
def journal_connection(path: str, synchronous: str) -> Iterator[Any]:
    """The journal's connection for one call: a SQLite journal's is opened
    once per process, thread and file, its schema installed once, and kept
    (a call pays its own transactions only: no open, no install, and no
    checkpoint at every close, which cost a FULL journal about four syncs a
    call). Reopened when the file at ``path`` is no longer the one it opened
    (deleted or replaced), or after a fork; a call that fails leaves no
    transaction open on it. A ``postgresql://`` journal opens per call."""
    if on_server(path):
        with opened(path, synchronous=synchronous) as conn:
            journal.install(conn)
            yield conn
        return
    kept = getattr(_OPEN, "kept", None)
    if kept is None or kept[0] != os.getpid():  # a forked child opens its own
        kept = _OPEN.kept = (os.getpid(), {})
    conns = kept[1]
    try:
        here = os.stat(path)
        identity = (here.st_dev, here.st_ino)
    except FileNotFoundError:
        identity = None
    entry = conns.get((path, synchronous))
    if entry is not None and entry[0] != identity:  # not the file it opened
        conns.pop((path, synchronous))[1].close()
        entry = None
    if entry is None:
        conn = connect(path, synchronous=synchronous)
        try:
            journal.install(conn)
        except BaseException:
            conn.close()
            raise
        here = os.stat(path)
        entry = conns[(path, synchronous)] = ((here.st_dev, here.st_ino), conn)
    conn = entry[1]
    try:
        yield conn
    finally:
        if conn.in_transaction:  # an error mid-transaction: nothing half-kept
            conn.rollback()


class ProbeContract(TypeError):
    """A probe that is missing or answered something other than
    ``(done, observed)``: refused before the body runs (chapter 12)."""


class NotSerializable(TypeError):
    """Arguments (before anything is written) or a result (after the effect:
    the call is left in doubt for the probe) that JSON cannot hold."""


def jsonable(value: Any) -> Any:
    """``value`` as the journal stores it: a pydantic model or a dataclass as
    its fields, anything else as it is (chapter 12)."""
    if hasattr(value, "model_dump") and not isinstance(value, type):
        return value.model_dump(mode="json")  # pydantic, as the frameworks do
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def checked_probe_answer(name: str, answer: Any) -> tuple:
    if (not isinstance(answer, (tuple, list)) or len(answer) != 2
            or not isinstance(answer[0], bool)):
        raise ProbeContract(f"{name}: {PROBE_CONTRACT}; it returned {answer!r}")
    return answer[0], jsonable(answer[1])


class EffectTool:
    """One tool whose effect is keyed by the action, journaled, and probed on
    resume (chapter 12).

    ``body(**arguments, operation_key=KEY)`` performs the effect and returns
    its JSON result (a pydantic model or dataclass is stored as its fields);
    ``probe(**arguments, operation_key=KEY)`` answers ``(done, observed)``:
    did the service get this action, and what it shows. Either may be
    ``async def``: an async body makes an async tool (``await tool(...)``),
    with the same guarantee, its journal work run off the event loop.

    ``task`` scopes the key: a string (``restock-flour-0042``) or a callable
    with no arguments, asked at every call, that names the run the call
    belongs to (LangGraph's thread id, DBOS's or Temporal's workflow id:
    ``adapters.langgraph.thread_scope``, ``adapters.dbos.workflow_scope``,
    ``adapters.temporal.workflow_scope``). It must give the same answer in
    every process that resumes that run.

    Two calls with the same scope, tool and arguments are ONE action: the
    second returns the first's result and performs nothing. A deliberate
    repeat (two identical messages on purpose) says which one it is:
    ``tool(**arguments, occurrence=2)`` is another effect, with its own key.

    ``journal_path`` is any store the book opens: a SQLite file (one host;
    ``synchronous`` as chapter 11 measures it) or a ``postgresql://`` URL
    (chapter 10). When a retry can run in another process on another host
    (a Temporal activity retried on whichever worker polls next, a DBOS
    workflow recovered elsewhere), every one of them must name the SAME
    journal: a local file per host cannot see the first attempt's intent.

    Mistakes are refused before anything is written: a missing probe, a
    probe whose answer is not ``(done, observed)``, arguments JSON cannot
    hold, a scope that is not text. A body whose result JSON cannot hold is
    found only after its effect: that call is left in doubt, and the next
    call probes it."""

    def __init__(self, body: Callable[..., Any], probe: Callable[..., Any] | None,
                 *, journal_path: str, task: str | Callable[[], str],
                 name: str | None = None,
                 ttl: float = DEFAULT_TTL_S, wait_s: float = DEFAULT_WAIT_S,
                 wait_out_s: float = DEFAULT_WAIT_OUT_S,
                 owner: str | None = None, synchronous: str = "NORMAL") -> None:
        if not callable(body):
            raise TypeError(f"the body must be a function, got {body!r}")
        self.name = check_text("tool name", name or body.__name__)
        if probe is None or not callable(probe):
            raise ProbeContract(f"{self.name}: a probe is required: {PROBE_CONTRACT}")
        self.body, self.probe = body, probe
        if OCCURRENCE in inspect.signature(body).parameters:
            raise TypeError(f"{self.name}: '{OCCURRENCE}' is the adapter's keyword"
                            " (a deliberate repeat); rename the body's parameter")
        self.journal_path = check_text("journal_path", str(journal_path))
        self.task = task if callable(task) else check_text("task", task)
        if not 0 < wait_s < ttl:
            raise ValueError(f"the request's wait ({wait_s} s) must fit in the "
                             f"lease ({ttl} s)")
        self.ttl, self.wait_s, self.wait_out_s = ttl, wait_s, wait_out_s
        self.owner, self.synchronous = owner, synchronous
        self.is_async = inspect.iscoroutinefunction(body)
        self.probe_is_async = inspect.iscoroutinefunction(probe)
        self.probe_checked = False  # its answer's shape, before the first claim
        self.function = self._as_function()

    def scope(self) -> str:
        """The run this call belongs to: ``task``, or what its callable says now."""
        if not callable(self.task):
            return self.task
        try:
            return check_text(f"{self.name}: the task scope", self.task())
        except ValueError as error:
            raise ValueError(str(error)) from None

    def call_task(self, arguments: dict, occurrence: int = 1) -> str:
        """The journal's task for one action: (scope, tool, exact arguments,
        and which deliberate repeat it is, past the first)."""
        if isinstance(occurrence, bool) or not isinstance(occurrence, int) \
                or occurrence < 1:
            raise ValueError(f"{self.name}: occurrence must be an int >= 1,"
                             f" got {occurrence!r}")
        try:
            canonical(arguments)
        except (TypeError, ValueError) as error:
            raise NotSerializable(
                f"{self.name}: the arguments cannot be keyed (not JSON: {error});"
                " nothing was run") from None
        action = "call" if occurrence == 1 else f"call-{occurrence}"
        return operation_key(self.scope(), self.name, action, arguments)

    def key(self, *, occurrence: int = 1, **arguments) -> str:
        """The operation key the service gets for this action (chapter 12)."""
        return journal.step_key(self.call_task(arguments, occurrence),
                                self.step(arguments))

    def step(self, arguments: dict) -> Step:
        return Step(1, self.name, dict(arguments))

    def __call__(self, *, occurrence: int = 1, **arguments) -> Any:
        """Run the action at most once per key, as chapter 07's journal runs a
        step: skip (outcome recorded), probe (in doubt) or run. For an async
        body this returns the coroutine to await."""
        if self.is_async:
            return self.acall(occurrence=occurrence, **arguments)
        task = self.call_task(arguments, occurrence)
        if self.probe_is_async:
            raise TypeError(f"{self.name}: a sync body needs a sync probe")
        return self._run(task, arguments, self._sync_body, self.probe)

    async def acall(self, *, occurrence: int = 1, **arguments) -> Any:
        """``__call__`` for an async body (or probe): the journal's work runs
        in a thread, the body and probe on this event loop, awaited there."""
        task = self.call_task(arguments, occurrence)
        loop = asyncio.get_running_loop()

        def on_loop(function):
            if not inspect.iscoroutinefunction(function):
                return function

            def run(**kwargs):
                return asyncio.run_coroutine_threadsafe(
                    function(**kwargs), loop).result()
            return run

        body = self._sync_body if not self.is_async else on_loop(self.body)
        return await asyncio.to_thread(self._run, task, arguments, body,
                                       on_loop(self.probe))

    def _sync_body(self, **kwargs):
        return self.body(**kwargs)

    def _run(self, task: str, arguments: dict, body, probe) -> Any:
        plan = Plan(task, (self.step(arguments),))

        def asked(args, key):
            answer = probe(**args, **{KEY_PARAMETER: key})
            return checked_probe_answer(self.name, answer)

        def performed(args, key):
            result = jsonable(body(**args, **{KEY_PARAMETER: key}))
            try:
                canonical(result)
            except (TypeError, ValueError) as error:
                raise NotSerializable(
                    f"{self.name}: the effect ran (key {key}) but its result is not"
                    f" JSON ({error}); the call is left in doubt for the probe"
                ) from None
            return result

        # The probe's shape is checked before this tool's first claim: nothing
        # is written for a probe that breaks its contract (it is a read, by
        # contract). Later answers are checked where they are used.
        if not self.probe_checked:
            asked(arguments, journal.step_key(task, self.step(arguments)))
            self.probe_checked = True
        action = journal.Action(execute=performed, probe=asked, wait_s=self.wait_s)
        owner = self.owner or f"{self.name}@pid-{os.getpid()}"
        deadline = time.monotonic() + self.wait_out_s
        with journal_connection(self.journal_path, self.synchronous) as conn:
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
        framework inspects to build its tool, step or activity. Its
        annotations are resolved in the body's own module
        (``typing.get_type_hints``), so string annotations and
        ``from __future__ import annotations`` there read as the types."""
        shown = inspect.signature(self.body)
        try:
            hints = typing.get_type_hints(self.body, include_extras=True)
        except Exception as error:  # noqa: BLE001 - one line naming the cause
            raise TypeError(f"{self.name}: its annotations do not resolve in"
                            f" {self.body.__module__}: {error}") from None
        parameters = [p.replace(annotation=hints.get(name, p.annotation))
                      for name, p in shown.parameters.items() if name != KEY_PARAMETER]
        signature = shown.replace(parameters=parameters,
                                  return_annotation=hints.get(
                                      "return", shown.return_annotation))

        def bound(args, kwargs):
            arguments = signature.bind(*args, **kwargs)  # positional, as DBOS may
            arguments.apply_defaults()
            return arguments.arguments

        if self.is_async:
            async def call(*args, **kwargs):
                return await self.acall(**bound(args, kwargs))
        else:
            def call(*args, **kwargs):
                return self(**bound(args, kwargs))

        functools.update_wrapper(call, self.body)
        del call.__wrapped__  # the signature below is the one to read
        call.__signature__ = signature
        call.__annotations__ = {name: hint for name, hint in hints.items()
                                if name != KEY_PARAMETER}
        call.__name__ = call.__qualname__ = self.name
        return call


def guarded(probe: Callable[..., Any], **options) -> Callable:
    """Decorator form: ``@guarded(probe, journal_path=..., task=...)`` over a
    body gives its ``EffectTool`` (chapter 12)."""
    return lambda body: EffectTool(body, probe, **options)
