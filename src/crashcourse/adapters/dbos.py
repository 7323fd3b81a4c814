"""An ``EffectTool`` as a DBOS step (chapter 12).

``as_step(effect)`` registers the adapter's call as a ``@DBOS.step`` named
after the tool. DBOS records the step's output once it returns; the adapter
covers the window DBOS cannot, between the service's answer and that
record: the key from the action, the intent first, the probe when a
recovered workflow runs the step again. Call it before ``DBOS.launch()``,
like any step. DBOS is imported here, when this module is, never by
``crashcourse.adapters`` itself.
"""

from __future__ import annotations

from dbos import DBOS

from crashcourse.adapters import EffectTool


def workflow_scope() -> str:
    """The key's scope for a step: the id of the workflow running it
    (``DBOS.workflow_id``), the id DBOS recovers it under. A step is
    registered once per process, before ``DBOS.launch()``; this is asked at
    each call, so two workflows calling one step get two scopes. Pass it as
    ``task=workflow_scope``."""
    workflow = DBOS.workflow_id
    if not workflow:
        raise ValueError("workflow_scope: not inside a DBOS workflow")
    return workflow


def as_step(effect: EffectTool, **step_options):
    """The DBOS step for ``effect`` (chapter 12); ``step_options`` go to
    ``DBOS.step`` (retries, for one)."""
    return DBOS.step(name=effect.name, **step_options)(effect.function)
