"""An ``EffectTool`` as a Temporal activity (chapter 12).

``as_activity(effect)`` defines a synchronous activity named after the tool
that takes the tool's arguments as one dict (what a workflow passes to
``execute_activity(name, arguments)``). The server retries an attempt whose
worker died; the adapter makes the retry a lookup: the key from the action,
the intent first, the probe before anything is sent again. A worker runs
it with an ``activity_executor``, as any synchronous activity. Temporal is
imported here, when this module is, never by ``crashcourse.adapters``.
"""

from __future__ import annotations

from temporalio import activity

from crashcourse.adapters import EffectTool


def workflow_scope() -> str:
    """The key's scope for an activity: the id of the workflow that
    scheduled it (``activity.info().workflow_id``), the same on every retry,
    whichever worker runs it. Pass it as ``task=workflow_scope``."""
    return activity.info().workflow_id


def as_activity(effect: EffectTool):
    """The Temporal activity for ``effect`` (chapter 12)."""

    if effect.is_async:  # an async activity: runs on the worker's event loop
        @activity.defn(name=effect.name)
        async def run(arguments: dict):
            return await effect.acall(**arguments)
    else:
        @activity.defn(name=effect.name)
        def run(arguments: dict):
            return effect(**arguments)

    run.__doc__ = effect.function.__doc__
    return run
