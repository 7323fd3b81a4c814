"""An ``EffectTool`` as a LangChain tool, for LangGraph agents (chapter 12).

``as_tool(effect)`` gives a ``StructuredTool`` whose schema is the body's
arguments (the operation key is not one: the model never sees it) and whose
call goes through the adapter: key from the action, intent first, probe on
resume. Hand it to ``create_agent``, a ``ToolNode``, or ``.invoke`` it from a
functional API ``@task``. LangChain is imported here, when this module is,
never by ``crashcourse.adapters`` itself.
"""

from __future__ import annotations

from langchain_core.tools import StructuredTool

from crashcourse.adapters import EffectTool

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["thread_scope", "as_tool"]


def thread_scope() -> str:
    """The key's scope for a tool called inside a LangGraph run: the thread
    id of the run's config (``config={"configurable": {"thread_id": ...}}``),
    the id LangGraph resumes a thread by. Pass it as ``task=thread_scope``."""
    from langgraph.config import get_config  # only inside a run

    thread = get_config().get("configurable", {}).get("thread_id")
    if not isinstance(thread, str) or not thread:
        raise ValueError("thread_scope: the run's config has no thread_id"
                         " (invoke the graph with configurable.thread_id)")
    return thread


def as_tool(effect: EffectTool) -> StructuredTool:
    """The LangChain tool for ``effect`` (chapter 12): an async body gives a
    tool with only a coroutine (``.ainvoke``, what an async graph awaits)."""
    body = {"coroutine" if effect.is_async else "func": effect.function}
    return StructuredTool.from_function(**body, name=effect.name,
                                        description=effect.function.__doc__
                                        or effect.name)
