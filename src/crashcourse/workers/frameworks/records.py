"""Where each framework records a finished tool call, read by the parent
from the framework's own database (chapter 12).

The experiment's third kill point is "after the framework durably recorded
step 2". It is found by reading, not by trusting a boundary: the worker is
held right before step 3's request, and the parent polls ``recorded`` until
the framework's own store shows step 2 done, then kills.

* LangGraph: a ``ToolMessage`` from ``place_order`` in a checkpoint of the
  thread or in a pending write of one (``checkpoints.sqlite``, decoded with
  LangGraph's own serializer; the file is only read).
* DBOS, and Pydantic AI with tools as steps: the step's row in
  ``operation_outputs`` with its output. Pydantic AI with plain tools has no
  row for a tool at all; what records that the tool finished is the model
  request after it (the third ``model.request`` step), whose input held
  the tool's result.
* Temporal: ``ActivityTaskCompleted`` for ``place_order`` in the workflow's
  history on the server.
* Restate: the completion of ``place_order``'s ``ctx.run`` in the server's
  journal of the workflow (its SQL introspection, ``sys_journal``).
* The OpenAI Agents SDK keeps no record: the ``RunState`` the agent saved at
  its last interruption holds ``place_order``'s output.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from crashcourse.workers.frameworks.shop import World

TOOL = "place_order"
# The OpenAI agent's saved RunState, in the trial's folder. Named here, not in
# the agent: reading it must not import the SDK while a worker is held at a
# boundary (seconds under load; a held worker gives up after 30 s).
OPENAI_STATE = "openai-run-state.json"


def read_only(path: str) -> sqlite3.Connection | None:
    """The file opened read-only, or None while it does not exist yet."""
    if not Path(path).is_file():
        return None
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)


def tool_messages(value, name: str) -> bool:
    """Whether ``value`` holds, anywhere inside, a tool message from ``name``."""
    if getattr(value, "type", None) == "tool" and getattr(value, "name", None) == name:
        return True
    if isinstance(value, dict):
        return any(tool_messages(v, name) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(tool_messages(v, name) for v in value)
    return False


def langgraph_recorded(world: World, tool: str = TOOL) -> bool:
    """A checkpoint or a pending write of the thread holds ``tool``'s result."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    conn = read_only(world.path("checkpoints.sqlite"))
    if conn is None:
        return False
    serde = JsonPlusSerializer()
    try:
        blobs = conn.execute(
            "SELECT type, checkpoint FROM checkpoints WHERE thread_id = :thread"
            " UNION ALL SELECT type, value FROM writes WHERE thread_id = :thread",
            {"thread": world.task}).fetchall()
    except sqlite3.OperationalError:  # no tables yet
        return False
    finally:
        conn.close()
    return any(tool_messages(serde.loads_typed((kind, blob)), tool)
               for kind, blob in blobs)


def dbos_steps(world: World) -> list[str]:
    """The workflow's recorded steps (with an output), in order."""
    conn = read_only(world.path("dbos.sqlite"))
    if conn is None:
        return []
    try:
        rows = conn.execute(
            "SELECT function_name FROM operation_outputs"
            " WHERE workflow_uuid = :workflow AND output IS NOT NULL"
            " ORDER BY function_id", {"workflow": world.task}).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()
    return [name for (name,) in rows]


def dbos_recorded(world: World, tool: str = TOOL) -> bool:
    return tool in dbos_steps(world)


def pydantic_plain_recorded(world: World, tool: str = TOOL) -> bool:
    """Plain tools have no step: the model request after the tool (the
    third) is the first record that holds its result."""
    return sum(name.endswith("model.request") for name in dbos_steps(world)) >= 3


def temporal_recorded(world: World, server, tool: str = TOOL) -> bool:
    from crashcourse.workers.frameworks.temporal_server import completed_activities

    return tool in completed_activities(server, world.task)


def openai_agents_recorded(world: World, tool: str = TOOL) -> bool:
    """The OpenAI Agents SDK keeps no record of its own: what survives the
    process is the ``RunState`` the agent saved at its last interruption.
    ``tool`` is recorded once that state holds its call's output."""
    path = Path(world.path(OPENAI_STATE))
    if not path.is_file():
        return False
    return tool in openai_state_outputs(json.loads(path.read_text()))


def openai_state_outputs(state: dict) -> list[str]:
    """The tools whose output a saved ``RunState`` holds, in order."""
    calls, done = {}, []

    def walk(value):
        if isinstance(value, dict):
            if value.get("type") == "function_call" and "call_id" in value:
                calls[value["call_id"]] = value.get("name")
            if value.get("type") == "function_call_output" and "call_id" in value:
                done.append(value["call_id"])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(state)
    return list(dict.fromkeys(calls.get(call, "?") for call in done))


def restate_recorded(world: World, server, tool: str = TOOL) -> bool:
    """Restate's journal of the invocation (its SQL introspection,
    ``sys_journal``) holds ``tool``'s ``ctx.run`` entry, completed."""
    from crashcourse.workers.frameworks.restate_server import completed_runs

    return tool in completed_runs(server, world.task)
