"""Exercise 12.1: a key that survives a re-asked model (chapter 12).

Reference answer: chapter 01's ``operation_key`` of the task, the tool's name
and its exact arguments (canonical JSON, SHA-256). The call's id is left out
on purpose: it names the model's message, not the action.
"""

from __future__ import annotations

from crashcourse.effects import operation_key


def action_key(task: str, call: dict) -> str:
    """The supplier's key for the action ``call`` asks for, made for ``task``."""
    return operation_key(task, call["name"], "call", call["args"])
